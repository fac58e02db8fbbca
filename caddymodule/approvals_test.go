package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// action_timeout and action_rule in a Caddyfile, and what they refuse.
func TestAdaptApprovals(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		action_timeout 15m
		action_timeout acp 2h
		action_rule {
			tenants alice bob
			provider acp
			tool_kind read
			decision approve
		}
		action_rule {
			title "Run rm *"
			decision reject
			message "not here"
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
									"action_rules": [
										{
											"decision": "approve",
											"provider": "acp",
											"tenants": [
												"alice",
												"bob"
											],
											"tool_kind": "read"
										},
										{
											"decision": "reject",
											"message": "not here",
											"title": "Run rm *"
										}
									],
									"action_timeouts": {
										"*": 900000000000,
										"acp": 7200000000000
									},
									"handler": "harness"
								}
							]
						}
					]
				}
			}
		}
	}
}`)
	for name, tc := range map[string]struct{ body, want string }{
		"timeout without a duration": {"harness {\n action_timeout\n}", "wrong argument count"},
		"timeout not a duration":     {"harness {\n action_timeout soon\n}", "action_timeout soon"},
		"rule without a decision":    {"harness {\n action_rule {\n tool_kind read\n }\n}", "decision (approve or reject) is required"},
		"rule unknown setting":       {"harness {\n action_rule {\n kind read\n }\n}", `unrecognized action_rule setting "kind"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+tc.body+"\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		h    *Harness // a pointer: Harness holds a mutex
		want string
	}{
		{&Harness{ActionRules: []ActionRule{{ToolKind: "read", Decision: "maybe"}}}, "decision must be approve or reject"},
		{&Harness{ActionTimeouts: map[string]caddy.Duration{"*": 0}}, "must be more than 0"},
	} {
		if err := tc.h.checkApprovals(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkApprovals: %v, want %q", err, tc.want)
		}
	}
}
