package proxy

import "testing"

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		path string
		want target
	}{
		{"/healthz", target{res: resHealth}},
		{"/healthz/", target{}},
		{"/v1", target{}},
		{"/v1/", target{}},
		{"/v1/runtime", target{res: resRuntime}},
		{"/v1/runtime/", target{}}, // no trailing-slash normalisation, as in the reference
		{"/v1/runtime/capabilities", target{res: resCapabilities}},
		{"/v1/conversations", target{res: resConversations}},
		{"/v1/conversations/conv_1", target{res: resConversation, id: "conv_1"}},
		{"/v1/conversations/", target{}},
		{"/v1/executions", target{res: resExecutions}},
		{"/v1/executions/", target{}},
		{"/v1/executions/exec_1", target{res: resExecution, id: "exec_1"}},
		{"/v1/executions/exec_1:cancel", target{res: resCancel, id: "exec_1"}},
		{"/v1/executions/exec_1%3Acancel", target{res: resCancel, id: "exec_1"}},
		{"/v1/executions/exec_1%3acancel", target{res: resCancel, id: "exec_1"}},
		{"/v1/executions/:cancel", target{res: resCancel, id: ""}},
		{"/v1/executions/a:b:cancel", target{res: resCancel, id: "a:b"}},
		{"/v1/executions/a%2Fb:cancel", target{res: resCancel, id: "a/b"}},
		{"/v1/executions/a:respond", target{res: resExecution, id: "a:respond"}},
		{"/v1/executions/exec_1/artifacts", target{res: resArtifacts, id: "exec_1"}},
		{"/v1/executions/exec_1/events", target{res: resEvents, id: "exec_1"}},
		{"/v1/executions/a%20b/events", target{res: resEvents, id: "a b"}},
		{"/v1/executions//events", target{}},
		{"/v1/executions/exec_1/actions/action_1:respond", target{res: resRespond, id: "exec_1", actionID: "action_1"}},
		{"/v1/executions/exec_1/actions/action_1%3Arespond", target{res: resRespond, id: "exec_1", actionID: "action_1"}},
		{"/v1/executions/exec_1/actions/:respond", target{res: resRespond, id: "exec_1", actionID: ""}},
		{"/v1/executions/exec_1/actions/action_1", target{res: resActionWithoutVerb, id: "exec_1"}},
		{"/v1/executions/exec_1/actions/", target{}},
		{"/v1/executions/exec_1/actions", target{}},
		{"/v1/executions/exec_1/actions/a:respond/x", target{}},
		{"/v1/executions/a%zz", target{}}, // invalid escape
		{"v1/runtime", target{}},
		{"//v1/runtime", target{}},
		{"/v2/runtime", target{}},
	} {
		if got := resolve(tc.path); got != tc.want {
			t.Errorf("resolve(%q) = %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

func TestHandles(t *testing.T) {
	for path, want := range map[string]bool{
		"/healthz":             true,
		"/v1":                  true,
		"/v1/":                 true,
		"/v1/executions/x":     true,
		"/healthz/x":           false,
		"/v10":                 false,
		"/":                    false,
		"/index.html":          false,
		"/.well-known/mercure": false,
	} {
		if got := Handles(path); got != want {
			t.Errorf("Handles(%q) = %v, want %v", path, got, want)
		}
	}
}
