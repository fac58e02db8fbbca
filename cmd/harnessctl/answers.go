package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// answerFlags are run's and watch's non-interactive answers.
type answerFlags struct {
	approve, deny bool
	input         string
}

const answerFlagsHelp = `Without asking: --approve approves and --deny denies every approval request, and
--input TEXT answers every input request with TEXT, each with a notice on stderr. A request
the flags do not cover is asked at the terminal as usual. (--input answers requests; the
execution's own input is INPUT.)`

func (f *answerFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.approve, "approve", false, "approve every approval request without asking")
	cmd.Flags().BoolVar(&f.deny, "deny", false, "deny every approval request without asking")
	cmd.Flags().StringVar(&f.input, "input", "", "answer every input request with `TEXT` without asking")
}

// policy checks the flags of cmd; the error is a usage error.
func (f *answerFlags) policy(cmd *cobra.Command) (answerPolicy, error) {
	var p answerPolicy
	switch {
	case f.approve && f.deny:
		return p, fmt.Errorf("--approve and --deny contradict each other")
	case f.approve:
		p.approval = new(true)
	case f.deny:
		p.approval = new(false)
	}
	if cmd.Flags().Changed("input") {
		p.input = &f.input
	}
	return p, nil
}

// answerPolicy is what the flags answer without asking; nil fields ask.
type answerPolicy struct {
	approval *bool
	input    *string
}

// answer is the policy's answer to action and the notice that says so; ok is false when the
// person must be asked.
func (p answerPolicy) answer(action api.ActionRequest) (response api.ActionResponse, notice string, ok bool) {
	switch {
	case action.Kind == api.ActionKindApproval && p.approval != nil:
		verb, flag := "approved", "--approve"
		if !*p.approval {
			verb, flag = "denied", "--deny"
		}
		return api.ActionResponse{Approved: p.approval}, fmt.Sprintf("%s %q (%s)", verb, action.Title, flag), true
	case action.Kind != api.ActionKindApproval && p.input != nil:
		return api.ActionResponse{Value: new(api.JSONValue(*p.input))}, fmt.Sprintf("answered %q with %q (--input)", action.Title, *p.input), true
	}
	return api.ActionResponse{}, "", false
}

// question is the prompt for action.
func question(action api.ActionRequest) string {
	if action.Kind == api.ActionKindApproval {
		q := action.Title
		if action.Description != nil && *action.Description != "" {
			q += " — " + *action.Description
		}
		return "? " + q + " [y/N] "
	}
	return "? " + action.Title + ": "
}

// responseTo is the answer a typed line gives to action: y or yes approves, n, no or an empty
// line (the default, N) denies, anything else is no answer (false: the question is asked
// again); for input, the line is the value.
func responseTo(action api.ActionRequest, line string) (api.ActionResponse, bool) {
	if action.Kind == api.ActionKindApproval {
		var approved bool
		switch strings.ToLower(line) {
		case "y", "yes":
			approved = true
		case "", "n", "no":
		default:
			return api.ActionResponse{}, false
		}
		return api.ActionResponse{Approved: &approved}, true
	}
	return api.ActionResponse{Value: new(api.JSONValue(line))}, true
}
