package main

import (
	"encoding/json"
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
}

// parseObject parses a JSON object flag value.
func parseObject(flagName, s string) (*api.JSONObject, error) {
	if s == "" {
		return nil, nil
	}
	var o api.JSONObject
	if err := json.Unmarshal([]byte(s), &o); err != nil || o == nil {
		return nil, fmt.Errorf("--%s must be a JSON object, e.g. '{\"key\":\"value\"}'", flagName)
	}
	return &o, nil
}
