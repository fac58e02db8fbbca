package main

import (
	"context"
	"fmt"
	"io"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Who did it: a server configured with `identity` records who answered an action and who
// cancelled as `actor` in the data of action.responded and run.cancelled (an extension).
// harnessctl names them where it reports those events: run and watch in their notices, get in
// a row per answer and cancellation. Against a server that records nobody, nothing changes.

// byActor is " by NAME" when the event names who caused it, "" otherwise.
func byActor(a *api.Actor) string {
	if a == nil || a.ID == "" {
		return ""
	}
	return " by " + a.ID
}

// answerVerb says what an answer was: approved, denied, or answered (an input).
func answerVerb(d api.ActionRespondedData) string {
	switch {
	case d.Approved == nil:
		return "answered"
	case *d.Approved:
		return "approved"
	default:
		return "denied"
	}
}

// whoRow is one row of get's "who did it" rows.
type whoRow struct{ label, text string }

// whoDidIt reads the execution's events and returns a row for each answer and cancellation
// that names who made it.
func whoDidIt(ctx context.Context, c *sdk.Client, id string) ([]whoRow, error) {
	var rows []whoRow
	var cursor int64
	for {
		page, err := c.ListEvents(ctx, id, cursor, 0)
		if err != nil {
			return nil, err
		}
		if len(page.Events) == 0 {
			return rows, nil
		}
		for _, event := range page.Events {
			switch event.Type {
			case api.StandardEventTypeActionResponded:
				if d, err := event.Data.AsActionRespondedData(); err == nil && d.Actor != nil {
					rows = append(rows, whoRow{answerVerb(d) + " by", fmt.Sprintf("%s (%s, %s)", d.Actor.ID, d.ActionID, event.Time)})
				}
			case api.StandardEventTypeRunCancelled:
				if d, err := event.Data.AsRunCancelledData(); err == nil && d.Actor != nil {
					rows = append(rows, whoRow{"cancelled by", fmt.Sprintf("%s (%s)", d.Actor.ID, event.Time)})
				}
			}
		}
		cursor = page.NextCursor
	}
}

// printWhoRows lists whoDidIt's rows under an execution's fields, as printExecution aligns
// them.
func printWhoRows(w io.Writer, rows []whoRow) {
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %s\n", r.label+":", r.text)
	}
}
