package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

const defaultBase = "http://127.0.0.1:4310"

// baseURL is --base, else $HARNESS_URL, else the default.
func (a *app) baseURL(g *globals) string {
	switch {
	case g.base != "":
		return g.base
	case a.getenv("HARNESS_URL") != "":
		return a.getenv("HARNESS_URL")
	}
	return defaultBase
}

// printJSON prints v indented, for people and for jq alike.
func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// printJSONLine prints v on one line (event streams).
func printJSONLine(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}

// printExecution prints an execution for people, or as JSON.
func printExecution(w io.Writer, g *globals, e api.Execution) {
	if g.json {
		printJSON(w, e)
		return
	}
	row := func(k, v string) { fmt.Fprintf(w, "%-14s %s\n", k+":", v) }
	row("id", e.ID)
	row("state", string(e.State))
	row("provider", e.ProviderID)
	row("conversation", e.ConversationID)
	row("input", e.Input)
	if len(e.RequiredCapabilities) > 0 {
		row("requires", strings.Join(e.RequiredCapabilities, ", "))
	}
	if len(e.EffectiveConfig) > 0 {
		b, _ := json.Marshal(e.EffectiveConfig)
		row("config", string(b))
	}
	row("created", e.CreatedAt)
	if e.StartedAt != nil {
		row("started", *e.StartedAt)
	}
	if e.EndedAt != nil {
		row("ended", *e.EndedAt)
	}
	if e.FinalOutput != nil {
		row("output", *e.FinalOutput)
	}
	if e.Error != nil {
		row("error", e.Error.Code+": "+e.Error.Message)
	}
	if p := e.PendingAction; p != nil {
		// The snapshot's pendingAction extension: what to answer, and the command that does.
		row("waiting for", string(p.Kind)+": "+p.Title)
		if p.Description != nil && *p.Description != "" {
			row("about", *p.Description)
		}
		answer := "--approve (or --deny)"
		if p.Kind == api.ActionKindInput {
			answer = "--value TEXT"
		}
		row("answer with", "harnessctl respond "+answer+" "+e.ID+" "+p.ID)
	}
}

// parseObject parses a JSON object flag value. A value that is not JSON is reported with the
// parser's error and where it is, the value shown with a caret under that place (a shell may
// have eaten quotes: '{requireApproval:true}' is the usual one).
func parseObject(flagName, s string) (*api.JSONObject, error) {
	if s == "" {
		return nil, nil
	}
	var o api.JSONObject
	err := json.Unmarshal([]byte(s), &o)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		at := int(syntax.Offset) - 1 // Offset counts the bytes read, the bad one included
		at = max(0, min(at, len(s)))
		line := 1 + strings.Count(s[:at], "\n")
		column := at - strings.LastIndex(s[:at], "\n")
		msg := fmt.Sprintf("--%s is not valid JSON: %v (line %d, column %d)", flagName, syntax, line, column)
		if !strings.Contains(s, "\n") {
			msg += fmt.Sprintf("\n  %s\n  %s^", s, strings.Repeat(" ", at))
		}
		return nil, errors.New(msg + "\n" + objectExample(flagName))
	case err != nil || o == nil:
		return nil, errors.New("--" + flagName + " must be a JSON object, not " + describeJSON(s) + "\n" + objectExample(flagName))
	}
	return &o, nil
}

// objectExample is the hint after a bad JSON object flag.
func objectExample(flagName string) string {
	example := `{"key":"value"}`
	if flagName == "config" {
		example = `{"requireApproval":true}`
	}
	return "  e.g. --" + flagName + " '" + example + "' (keys and strings in double quotes, the whole in single quotes for the shell)"
}

// describeJSON names the kind of a JSON value that is valid but not an object.
func describeJSON(s string) string {
	var v any
	_ = json.Unmarshal([]byte(s), &v)
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "that value"
}
