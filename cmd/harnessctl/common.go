package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

const defaultBase = "http://127.0.0.1:4310"

// globals are the flags every command takes, before or after its name.
type globals struct {
	base string
	json bool
}

// flagSet returns a FlagSet with the global flags bound to g (their current values are the
// defaults, so `harnessctl --json get X` and `harnessctl get --json X` mean the same).
func (g *globals) flagSet(a *app, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.StringVar(&g.base, "base", g.base, "server base URL (default $HARNESS_URL, else "+defaultBase+")")
	fs.BoolVar(&g.json, "json", g.json, "print objects as JSON")
	return fs
}

// parse parses a command's flags with its help text; ok is false when the command must stop
// with code.
func (a *app) parse(fs *flag.FlagSet, c command, args []string) (code int, ok bool) {
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: harnessctl %s [flags] %s\n\n%s\n\nFlags:\n", c.name, c.args, c.summary)
		fs.PrintDefaults()
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.help))
	}
	if err := fs.Parse(args); err != nil {
		return parseExit(err), false
	}
	return exitOK, true
}

// parseExit is the exit code of a flag parse error: -h is a request, not an error.
func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// usageError reports a bad command line.
func (a *app) usageError(format string, args ...any) int {
	fmt.Fprintf(a.stderr, "harnessctl: "+format+"\nRun 'harnessctl help' for usage.\n", args...)
	return exitUsage
}

// fail reports an error and returns exitError.
func (a *app) fail(err error) int {
	// The SDK's errors start with "harness: "; once is enough.
	fmt.Fprintf(a.stderr, "harnessctl: %s\n", strings.TrimPrefix(err.Error(), "harness: "))
	return exitError
}

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

// client is the SDK client for the chosen server, with the token of $HARNESS_TOKEN.
func (a *app) client(g *globals) (*sdk.Client, error) {
	var opts []sdk.Option
	if token := a.getenv("HARNESS_TOKEN"); token != "" {
		opts = append(opts, sdk.WithBearerToken(token))
	}
	return sdk.New(a.baseURL(g), opts...)
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
	row("id", e.Id)
	row("state", string(e.State))
	row("provider", e.ProviderId)
	row("conversation", e.ConversationId)
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
func parseObject(flagName, s string) (*api.JsonObject, error) {
	if s == "" {
		return nil, nil
	}
	var o api.JsonObject
	if err := json.Unmarshal([]byte(s), &o); err != nil || o == nil {
		return nil, fmt.Errorf("--%s must be a JSON object, e.g. '{\"key\":\"value\"}'", flagName)
	}
	return &o, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }
