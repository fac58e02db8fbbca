package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestAdaptAllowedOrigins: allowed_origins takes several origins and may be repeated; they reach
// the JSON config in order, as written.
func TestAdaptAllowedOrigins(t *testing.T) {
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(`:4310 {
	harness {
		allowed_origins https://console.example.com http://localhost:3000
		allowed_origins https://other.example
	}
}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var adapted struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []struct {
						Handle []Harness `json:"handle"`
					} `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(cfg, &adapted); err != nil {
		t.Fatal(err)
	}
	got := adapted.Apps.HTTP.Servers["srv0"].Routes[0].Handle[0].AllowedOrigins
	want := []string{"https://console.example.com", "http://localhost:3000", "https://other.example"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("allowed_origins %v, want %v\n%s", got, want, cfg)
	}
}

func TestAllowedOriginsErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"no origin":   {"harness {\n allowed_origins\n}", "wrong argument count"},
		"null":        {"harness {\n allowed_origins null\n}", `allowed_origins: "null"`},
		"with a path": {"harness {\n allowed_origins https://app.example/console\n}", "allowed_origins: an origin is scheme://host[:port]"},
		"no scheme":   {"harness {\n allowed_origins app.example\n}", "allowed_origins: an origin is scheme://host[:port]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+tc.body+"\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The JSON config is checked too (Validate), for configs that never were a Caddyfile.
	h := &Harness{AllowedOrigins: []string{"https://ok.example", "null"}}
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "allowed_origins") {
		t.Fatalf("Validate with null: %v", err)
	}
}
