package backend_test

import (
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
)

// FuzzCanonicalJSON: for any JSON document, the canonical form is valid JSON, denotes the same
// value, and is a fixed point (canonicalizing it again changes nothing).
func FuzzCanonicalJSON(f *testing.F) {
	for _, seed := range []string{`{"b":1,"a":[1.0,2e3,-0,"x"]}`, `"\u2028\ud800"`, `[1e21,1e-7,0.1]`, `{"é":{"":null}}`, `123456789012345678901234567890`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		canonical, err := backend.CanonicalJSON(v)
		if err != nil {
			t.Fatalf("canonical of %q: %v", doc, err)
		}
		var back any
		if err := json.Unmarshal([]byte(canonical), &back); err != nil {
			t.Fatalf("canonical form %q of %q is not JSON: %v", canonical, doc, err)
		}
		again, err := backend.CanonicalJSON(back)
		if err != nil || again != canonical {
			t.Fatalf("not a fixed point: %q → %q", canonical, again)
		}
	})
}
