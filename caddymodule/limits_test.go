package caddymodule

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestAdaptEventLimits pins the JSON of the per-execution event limits.
func TestAdaptEventLimits(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		max_events 5000
		max_event_bytes 8MiB
	}
}
`, "caddyfile", `{
	"apps": {
		"http": {
			"servers": {
				"srv0": {
					"listen": [
						":4310"
					],
					"routes": [
						{
							"handle": [
								{
									"handler": "harness",
									"max_event_bytes": 8388608,
									"max_events": 5000
								}
							]
						}
					]
				}
			}
		}
	}
}`)
}

func TestEventLimitCaddyfileErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"events not a number": {"harness {\n max_events many\n}", `max_events: "many" is not a whole number of at least 1`},
		"events zero":         {"harness {\n max_events 0\n}", `max_events: "0" is not a whole number of at least 1`},
		"events missing":      {"harness {\n max_events\n}", "wrong argument count"},
		"bytes not a size":    {"harness {\n max_event_bytes lots\n}", "max_event_bytes"},
		"bytes two values":    {"harness {\n max_event_bytes 1MiB 2MiB\n}", "wrong argument count"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+tc.body+"\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestEventLimitOverHTTP runs the real Caddy with a small max_events: the mock, echoing a long
// input word by word, fails at the limit with one run.failed naming it.
func TestEventLimitOverHTTP(t *testing.T) {
	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		data_dir %s
		max_events 20
		provider mock
	}
}
`, t.TempDir()))
	c := newClient(t, httpURL, nil)
	conv := c.createConversation()
	config := api.JSONObject{"delayMs": 0}
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		Input: strings.Repeat("word ", 1000), Config: config})

	events := c.openStream(exec.ID, "").readAll(t)
	assertContiguous(t, events, 1)
	const message = "Execution exceeded the limit of 20 events"
	if len(events) != 21 || events[20].Type != api.StandardEventTypeRunFailed || typed(events[20].Data.AsRunFailedData()).Message != message {
		t.Fatalf("%d events ending %v, want 20 and run.failed %q", len(events), types(events)[len(events)-1], message)
	}
	final := c.execution(exec.ID)
	if final.State != api.ExecutionStateFailed || final.Error == nil || final.Error.Code != "PROVIDER_ERROR" || final.Error.Message != message {
		t.Fatalf("final execution %s %+v", final.State, final.Error)
	}
}

// TestNegativeEventLimitsAreRefused: JSON configs can say what the Caddyfile cannot.
func TestNegativeEventLimitsAreRefused(t *testing.T) {
	for _, field := range []string{"max_events", "max_event_bytes"} {
		h := &Harness{}
		switch field {
		case "max_events":
			h.MaxEvents = -1
		default:
			h.MaxEventBytes = -1
		}
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Fatalf("%s -1: %v, want an error naming it", field, err)
		}
	}
}
