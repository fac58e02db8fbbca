package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddytest"
)

func TestAdaptWebhooks(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		webhook https://hooks.example.com/harness {
			events action.required run.completed
			secret {env.HARNESS_WEBHOOK_SECRET}
		}
		webhook http://127.0.0.1:9000/all {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
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
									"webhooks": [
										{
											"events": [
												"action.required",
												"run.completed"
											],
											"secret": "{env.HARNESS_WEBHOOK_SECRET}",
											"url": "https://hooks.example.com/harness"
										},
										{
											"secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
											"url": "http://127.0.0.1:9000/all"
										}
									]
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

func TestWebhookSettingsRejected(t *testing.T) {
	for _, tc := range []struct{ caddyfile, want string }{
		{"harness {\n webhook https://x.example {\n events run.completed\n }\n}", "secret is required"},
		{"harness {\n webhook {\n secret s\n }\n}", "wrong argument count"},
		{"harness {\n webhook https://x.example {\n secret s\n color blue\n }\n}", `unrecognized webhook setting "color"`},
	} {
		var h Harness
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.caddyfile))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.caddyfile, err, tc.want)
		}
	}
	for _, tc := range []struct {
		hook Webhook
		want string
	}{
		{Webhook{URL: "ftp://x.example", Secret: "s"}, "http or https"},
		{Webhook{URL: "https://x.example"}, "secret is required"},
	} {
		h := Harness{Webhooks: []Webhook{tc.hook}}
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.hook, err, tc.want)
		}
	}
	t.Setenv("HARNESS_TEST_WEBHOOK_SECRET", "whsec_short")
	h := Harness{Webhooks: []Webhook{{URL: "https://x.example", Secret: "{env.HARNESS_TEST_WEBHOOK_SECRET}"}}}
	if _, err := h.resolvedWebhooks(); err == nil || !strings.Contains(err.Error(), "after replacing placeholders") {
		t.Errorf("a bad secret from the environment: got %v", err)
	}
	t.Setenv("HARNESS_TEST_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	raw, err := h.resolvedWebhooks()
	if err != nil || !strings.Contains(raw, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") {
		t.Errorf("the placeholder was not replaced: %v", err)
	}
}
