package main

import (
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// An approval prompt takes y/yes, n/no or an empty line (the default, N); anything else is no
// answer, so the question is asked again rather than the run denied.
func TestResponseToApproval(t *testing.T) {
	approval := api.ActionRequest{Kind: api.ActionKindApproval}
	for line, want := range map[string]string{
		"y": "approve", "YES": "approve", "n": "deny", "No": "deny", "": "deny",
		"wait, what will this do?": "ask again", "yep": "ask again",
	} {
		response, ok := responseTo(approval, line)
		got := "ask again"
		if ok {
			got = map[bool]string{true: "approve", false: "deny"}[deref(response.Approved)]
		}
		if got != want {
			t.Errorf("%q at [y/N]: %s, want %s", line, got, want)
		}
	}
	if response, ok := responseTo(api.ActionRequest{Kind: api.ActionKindInput}, "anything at all"); !ok || response.Value == nil {
		t.Errorf("an input request takes any line as its value: %+v, %v", response, ok)
	}
}
