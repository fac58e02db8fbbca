package backend

import (
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The allocation-light encoders must write exactly what encoding/json writes, byte for byte:
// stored events are served verbatim, and their encoding must not depend on the path taken.
func TestTextDataMatchesEncodingJSON(t *testing.T) {
	for _, text := range []string{
		"", "hello ", "Echo: ", "w1 w2", "tab\tnewline\n", `quote " backslash \`, "<html>&amp;",
		"\u2028\u2029", "héllo wörld", "\x00\x1f\x7f", "bad utf8 \xff\xfe", "emoji 🙂",
	} {
		want, err := json.Marshal(map[string]string{"text": text})
		if err != nil {
			t.Fatal(err)
		}
		if got := textData(text); string(got) != string(want) {
			t.Errorf("textData(%q) = %s, want %s", text, got, want)
		}
	}
}

func TestEncodeEventRoundTrips(t *testing.T) {
	for _, id := range []string{"exec_0123456789abcdef0123456789abcdef", `odd"id<&>`} {
		raw := encodeEvent(id, 42, api.StandardEventTypeOutputTextDelta, "2026-11-29T19:50:06.123Z", textData("hi"))
		var re api.RuntimeEvent
		if err := json.Unmarshal(raw, &re); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if re.ExecutionId != id || re.Id != id+":42" || re.Sequence != 42 || re.Type != api.StandardEventTypeOutputTextDelta ||
			re.Time != "2026-11-29T19:50:06.123Z" || re.Data["text"] != "hi" {
			t.Fatalf("decoded %+v from %s", re, raw)
		}
		e, err := eventFromStored(42, raw)
		if err != nil || e.Sequence != 42 || e.Type != api.StandardEventTypeOutputTextDelta {
			t.Fatalf("eventFromStored: %+v, %v", e, err)
		}
		if _, err := eventFromStored(41, raw); err != nil {
			t.Fatalf("fast path trusts the key: %v", err)
		}
	}
	// A value the fast path does not recognise is decoded, and its sequence checked.
	legacy := []byte(`{"sequence":7,"type":"run.queued","data":{}}`)
	if e, err := eventFromStored(7, legacy); err != nil || e.Type != api.StandardEventTypeRunQueued {
		t.Fatalf("legacy: %+v, %v", e, err)
	}
	if _, err := eventFromStored(8, legacy); err == nil {
		t.Fatal("legacy value under the wrong key was accepted")
	}
}
