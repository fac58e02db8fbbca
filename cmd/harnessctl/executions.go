package main

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func newEventsCommand(a *app, g *globals) *cobra.Command {
	var after int64
	var follow bool
	cmd := &cobra.Command{
		Use:   "events EXECUTION_ID",
		Short: "print an execution's events as JSON lines (replay, or --follow until it ends)",
		Long: `Without --follow, prints the events stored so far and exits. With --follow, prints them
and then each new one as it happens, until the execution's terminal event (run.completed,
run.failed or run.cancelled); the stream reconnects by itself if the connection drops, and
never prints an event twice. Ctrl-C stops following; it does not cancel the execution.

One RuntimeEvent per line, for jq and friends (--json changes nothing here).`,
		Example: `  harnessctl events exec_3f9a…
  harnessctl events --after 2 exec_3f9a…
  harnessctl events --follow exec_3f9a… | jq -r 'select(.type=="output.text.delta").data.text'`,
	}
	cmd.Flags().Int64Var(&after, "after", 0, "print only events with a sequence greater than `N`")
	cmd.Flags().BoolVar(&follow, "follow", false, "wait for new events until the execution ends")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 1 {
			return a.usageError(cmd, "events: want exactly one EXECUTION_ID")
		}
		id := args[0]
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		if follow {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			for event, err := range c.Events(ctx, id, after) {
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
		cursor := after
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
	})
	return cmd
}

func newGetCommand(a *app, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get EXECUTION_ID",
		Short: "show an execution and its artifacts",
		Long: `Shows the execution's state, input, configuration, times, final output or error, and the
artifacts it has made. With --json, prints the execution as the server sends it (the
artifacts are 'harnessctl artifacts --json').`,
		Example: `  harnessctl get exec_3f9a…
  harnessctl get --json exec_3f9a… | jq -r .state`,
	}
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 1 {
			return a.usageError(cmd, "get: want exactly one EXECUTION_ID")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		ctx := context.Background()
		exec, err := c.GetExecution(ctx, args[0])
		if err != nil {
			return a.fail(err)
		}
		printExecution(a.stdout, g, exec)
		if !g.json {
			who, err := whoDidIt(ctx, c, exec.ID)
			if err != nil {
				return a.fail(err)
			}
			printWhoRows(a.stdout, who)
			artifacts, err := c.ListArtifacts(ctx, exec.ID)
			if err != nil {
				return a.fail(err)
			}
			printArtifactRows(a.stdout, artifacts)
		}
		return exitOK
	})
	return cmd
}

func newCancelCommand(a *app, g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel EXECUTION_ID",
		Short: "cancel an execution and show it once it is cancelled",
		Long:  `Waits until the execution is final. Cancelling a finished execution changes nothing.`,
		Example: `  harnessctl cancel exec_3f9a…
  harnessctl cancel --reason "wrong branch" exec_3f9a…`,
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (1–500 characters), recorded in the run.cancelled event")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 1 {
			return a.usageError(cmd, "cancel: want exactly one EXECUTION_ID")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		var req api.CancelExecutionRequest
		if reason != "" {
			req.Reason = &reason
		}
		exec, err := c.CancelExecution(context.Background(), args[0], req)
		if err != nil {
			return a.fail(err)
		}
		printExecution(a.stdout, g, exec)
		return exitOK
	})
	return cmd
}

func newRespondCommand(a *app, g *globals) *cobra.Command {
	var approve, deny bool
	var value, valueJSON, metadata string
	cmd := &cobra.Command{
		Use:   "respond EXECUTION_ID ACTION_ID",
		Short: "answer an approval or input request",
		Long:  `ACTION_ID is data.id of the action.required event (harnessctl events shows it).`,
		Example: `  harnessctl respond --approve exec_3f9a… action_77c1…
  harnessctl respond --deny exec_3f9a… action_77c1…
  harnessctl respond --value "blue" exec_3f9a… action_77c1…
  harnessctl respond --value-json '{"optionId":"allow-always"}' --approve exec_3f9a… action_77c1…`,
	}
	f := cmd.Flags()
	f.BoolVar(&approve, "approve", false, "approve (approved: true)")
	f.BoolVar(&deny, "deny", false, "deny (approved: false)")
	f.StringVar(&value, "value", "", "answer `text` (value: the string)")
	f.StringVar(&valueJSON, "value-json", "", "answer as any `JSON` value")
	f.StringVar(&metadata, "metadata", "", "metadata as a JSON `object`")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 2 {
			return a.usageError(cmd, "respond: want EXECUTION_ID and ACTION_ID")
		}
		var response api.ActionResponse
		switch {
		case approve && deny:
			return a.usageError(cmd, "respond: --approve and --deny contradict each other")
		case approve:
			response.Approved = new(true)
		case deny:
			response.Approved = new(false)
		}
		switch {
		case f.Changed("value") && f.Changed("value-json"):
			return a.usageError(cmd, "respond: give --value or --value-json, not both")
		case f.Changed("value"):
			response.Value = new(api.JSONValue(value))
		case f.Changed("value-json"):
			var v any
			if err := json.Unmarshal([]byte(valueJSON), &v); err != nil {
				return a.usageError(cmd, "respond: --value-json is not JSON: %v", err)
			}
			response.Value = &v
		}
		md, err := parseObject("metadata", metadata)
		if err != nil {
			return a.badValue(cmd, "respond: %v", err)
		}
		response.Metadata = md
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		exec, err := c.RespondToAction(context.Background(), args[0], args[1], response)
		if err != nil {
			return a.fail(err)
		}
		printExecution(a.stdout, g, exec)
		return exitOK
	})
	return cmd
}
