package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// watch with a conversation id, or with --all: one stream for a whole conversation or for
// everything the tenant may see (docs/protocol.md, "Conversation and tenant streams"). Such a
// stream has no end: it prints one line per event until Ctrl-C (exit 0), and resumes where it
// left off across cuts and server restarts (the SDK's FollowConversation and FollowTenant).

// streamFlags are watch's flags for those streams.
type streamFlags struct {
	all        bool
	after      string
	lifecycle  bool
	types      []string
	providers  []string
	conversion string // --conversation: the tenant stream narrowed to one conversation
}

func (f *streamFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.all, "all", false, "follow every execution the tenant may see (the tenant's stream)")
	cmd.Flags().StringVar(&f.after, "after", "", "go on after this cursor (printed with --json); 0: from the oldest event kept")
	cmd.Flags().BoolVar(&f.lifecycle, "lifecycle", false, "only starts, approvals and terminals (run.* and action.* events)")
	cmd.Flags().StringSliceVar(&f.types, "type", nil, "only these event types (comma-separated or repeated)")
	cmd.Flags().StringSliceVar(&f.providers, "provider", nil, "only executions of these providers")
	cmd.Flags().StringVar(&f.conversion, "conversation", "", "with --all: only this conversation")
}

func (f *streamFlags) used(cmd *cobra.Command) bool {
	for _, name := range []string{"after", "lifecycle", "type", "provider", "conversation"} {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}

func (f *streamFlags) options() sdk.FollowOptions {
	opts := sdk.FollowOptions{After: f.after, Lifecycle: f.lifecycle, Providers: f.providers, Conversation: f.conversion}
	for _, t := range f.types {
		opts.Types = append(opts.Types, api.StandardEventType(t))
	}
	return opts
}

// isConversationID tells a conversation id from an execution id by its prefix.
func isConversationID(id string) bool { return strings.HasPrefix(id, "conv_") }

// watchStream follows a conversation (conversationID set) or the tenant until Ctrl-C.
func (a *app) watchStream(g *globals, f *streamFlags, conversationID string) int {
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}
	interrupts, stopInterrupts := a.interrupts()
	defer stopInterrupts()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-interrupts:
			cancel()
		case <-ctx.Done():
		}
	}()
	events := c.FollowTenant(ctx, f.options())
	what := "everything this tenant may see"
	if conversationID != "" {
		events = c.FollowConversation(ctx, conversationID, f.options())
		what = "conversation " + conversationID
	}
	if !g.json {
		fmt.Fprintf(a.stderr, "harnessctl: watching %s; Ctrl-C stops\n", what)
	}
	for e, err := range events {
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return exitOK
			}
			return a.fail(err)
		}
		a.printStreamEvent(g, e)
	}
	return exitOK
}

// printStreamEvent prints one line: JSON ({"cursor":…,"event":…}, {"cursor":…,"gap":…} or
// {"cursor":…,"deleted":…}) with --json, else the time, the execution, the sequence, the type
// and a short summary (a deleted conversation: its id and how many executions went).
func (a *app) printStreamEvent(g *globals, e sdk.StreamEvent) {
	if g.json {
		line := map[string]any{"cursor": e.Cursor}
		switch {
		case e.Gap != nil:
			line["gap"] = e.Gap
		case e.Deleted != nil:
			line["deleted"] = e.Deleted
		default:
			line["event"] = e.Event
		}
		raw, _ := json.Marshal(line)
		fmt.Fprintln(a.stdout, string(raw))
		return
	}
	if e.Gap != nil {
		fmt.Fprintf(a.stdout, "-- events before %s are no longer kept by the server (retention); going on from there\n", e.Gap.ResumeAfter)
		return
	}
	if d := e.Deleted; d != nil {
		fmt.Fprintf(a.stdout, "%s -- conversation %s was deleted with its %d executions\n", d.Time, d.ConversationID, d.Executions)
		return
	}
	ev := e.Event
	fmt.Fprintf(a.stdout, "%s %s #%d %s%s\n", ev.Time, ev.ExecutionID, ev.Sequence, ev.Type, eventSummary(ev))
}

// eventSummary is a short text for the line of an event: a delta's text, a terminal's error.
func eventSummary(ev api.RuntimeEvent) string {
	var data map[string]any
	raw, _ := json.Marshal(ev.Data)
	_ = json.Unmarshal(raw, &data)
	for _, key := range []string{"text", "finalOutput", "message", "reason"} {
		if s, ok := data[key].(string); ok && s != "" {
			if len(s) > 80 {
				s = s[:77] + "..."
			}
			return " " + strings.ReplaceAll(fmt.Sprintf("%q", s), `\"`, `"`)
		}
	}
	return ""
}
