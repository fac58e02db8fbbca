package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/signal"

	"github.com/harness-edge/harness-edge/sdk/api"
)

var eventsCommand = command{
	name:    "events",
	args:    "EXECUTION_ID",
	summary: "print an execution's events as JSON lines (replay, or --follow until it ends)",
	help: `Without --follow, prints the events stored so far and exits. With --follow, prints them
and then each new one as it happens, until the execution's terminal event (run.completed,
run.failed or run.cancelled); the stream reconnects by itself if the connection drops, and
never prints an event twice. Ctrl-C stops following; it does not cancel the execution.

One RuntimeEvent per line, for jq and friends (--json changes nothing here).

Examples:
  harnessctl events exec_3f9a…
  harnessctl events --after 2 exec_3f9a…
  harnessctl events --follow exec_3f9a… | jq -r 'select(.type=="output.text.delta").data.text'`,
	run: (*app).events,
}

func (a *app) events(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "events")
	after := fs.Int64("after", 0, "print only events with a sequence greater than `N`")
	follow := fs.Bool("follow", false, "wait for new events until the execution ends")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return a.usageError("events: want exactly one EXECUTION_ID")
	}
	id := fs.Arg(0)
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}
	if *follow {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		for event, err := range c.Events(ctx, id, *after) {
			if err != nil {
				if ctx.Err() != nil {
					return exitOK
				}
				return a.fail(err)
			}
			printJSONLine(a.stdout, event)
		}
		return exitOK
	}
	ctx := context.Background()
	cursor := *after
	for {
		page, err := c.ListEvents(ctx, id, cursor, 0)
		if err != nil {
			return a.fail(err)
		}
		if len(page.Events) == 0 {
			return exitOK
		}
		for _, event := range page.Events {
			printJSONLine(a.stdout, event)
		}
		cursor = page.NextCursor
	}
}

var getCommand = command{
	name:    "get",
	args:    "EXECUTION_ID",
	summary: "show an execution",
	help: `Examples:
  harnessctl get exec_3f9a…
  harnessctl get --json exec_3f9a… | jq -r .state`,
	run: (*app).get,
}

func (a *app) get(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "get")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return a.usageError("get: want exactly one EXECUTION_ID")
	}
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}
	exec, err := c.GetExecution(context.Background(), fs.Arg(0))
	if err != nil {
		return a.fail(err)
	}
	printExecution(a.stdout, g, exec)
	return exitOK
}

var cancelCommand = command{
	name:    "cancel",
	args:    "EXECUTION_ID",
	summary: "cancel an execution and show it once it is cancelled",
	help: `Waits until the execution is final. Cancelling a finished execution changes nothing.

Examples:
  harnessctl cancel exec_3f9a…
  harnessctl cancel --reason "wrong branch" exec_3f9a…`,
	run: (*app).cancel,
}

func (a *app) cancel(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "cancel")
	reason := fs.String("reason", "", "why (1–500 characters), recorded in the run.cancelled event")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return a.usageError("cancel: want exactly one EXECUTION_ID")
	}
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}
	var req api.CancelExecutionRequest
	if *reason != "" {
		req.Reason = reason
	}
	exec, err := c.CancelExecution(context.Background(), fs.Arg(0), req)
	if err != nil {
		return a.fail(err)
	}
	printExecution(a.stdout, g, exec)
	return exitOK
}

var respondCommand = command{
	name:    "respond",
	args:    "EXECUTION_ID ACTION_ID",
	summary: "answer an approval or input request",
	help: `ACTION_ID is data.id of the action.required event (harnessctl events shows it).

Examples:
  harnessctl respond --approve exec_3f9a… action_77c1…
  harnessctl respond --deny exec_3f9a… action_77c1…
  harnessctl respond --value "blue" exec_3f9a… action_77c1…
  harnessctl respond --value-json '{"optionId":"allow-always"}' --approve exec_3f9a… action_77c1…`,
	run: (*app).respond,
}

func (a *app) respond(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "respond")
	approve := fs.Bool("approve", false, "approve (approved: true)")
	deny := fs.Bool("deny", false, "deny (approved: false)")
	value := fs.String("value", "", "answer `text` (value: the string)")
	valueJSON := fs.String("value-json", "", "answer as any `JSON` value")
	metadata := fs.String("metadata", "", "metadata as a JSON `object`")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return a.usageError("respond: want EXECUTION_ID and ACTION_ID")
	}
	var response api.ActionResponse
	switch {
	case *approve && *deny:
		return a.usageError("respond: --approve and --deny contradict each other")
	case *approve:
		response.Approved = new(true)
	case *deny:
		response.Approved = new(false)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["value"] && set["value-json"]:
		return a.usageError("respond: give --value or --value-json, not both")
	case set["value"]:
		response.Value = new(api.JsonValue(*value))
	case set["value-json"]:
		var v any
		if err := json.Unmarshal([]byte(*valueJSON), &v); err != nil {
			return a.usageError("respond: --value-json is not JSON: %v", err)
		}
		response.Value = &v
	}
	md, err := parseObject("metadata", *metadata)
	if err != nil {
		return a.usageError("respond: %v", err)
	}
	response.Metadata = md
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}
	exec, err := c.RespondToAction(context.Background(), fs.Arg(0), fs.Arg(1), response)
	if err != nil {
		return a.fail(err)
	}
	printExecution(a.stdout, g, exec)
	return exitOK
}
