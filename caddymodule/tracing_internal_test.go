package caddymodule

import "testing"

func TestRoutePatternHidesIDs(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/executions":                              "/v1/executions",
		"/v1/executions/exec_1":                       "/v1/executions/{id}",
		"/v1/executions/exec_1:cancel":                "/v1/executions/{id}:cancel",
		"/v1/executions/exec_1/events":                "/v1/executions/{id}/events",
		"/v1/executions/exec_1/actions/act_2:respond": "/v1/executions/{id}/actions/{id}:respond",
		"/v1/conversations/conv_1":                    "/v1/conversations/{id}",
		"/healthz":                                    "/healthz",
	} {
		if got := routePattern(path); got != want {
			t.Errorf("routePattern(%q) = %q, want %q", path, got, want)
		}
	}
}
