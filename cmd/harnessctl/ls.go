package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// lacksListing reports whether err is a server's "no such route" for the listing (404 or 405
// whose body is not a Problem: the reference's framework answers plain text) while the same
// server describes itself as a Harness runtime: a server without the extension, not a wrong URL.
func (a *app) lacksListing(ctx context.Context, c *sdk.Client, err error) bool {
	var e *sdk.Error
	if !errors.As(err, &e) || e.Code != sdk.CodeHTTPError || (e.StatusCode != http.StatusNotFound && e.StatusCode != http.StatusMethodNotAllowed) {
		return false
	}
	listing := a.wire.unexpected.Swap(nil)
	if _, err := c.DescribeRuntime(ctx); err != nil || a.wire.unexpected.Load() != nil {
		a.wire.unexpected.CompareAndSwap(nil, listing) // the hint fail gives for the listing's answer
		return false
	}
	return true
}

// ls uses the listing extension (GET /v1/executions, GET /v1/conversations/{id}/executions). A
// server that implements only the reference answers 404 or 405, which ls reports as it comes.
func newLsCommand(a *app, g *globals) *cobra.Command {
	var (
		states       []string
		conversation string
		limit        int
		all          bool
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "list executions, newest first",
		Long: `Lists executions newest first: one row each with its id, state, provider, conversation
and creation time. --state keeps only the given states (repeat it or separate with commas),
--conversation only one conversation's executions. It shows one page of --limit rows and says how
to get the next; --all walks every page. With --json, prints {"executions": […], "nextCursor": …}
for one page, or one execution per line with --all.

Listing is a harness-edge extension: against a server without it (the reference), ls says so.`,
		Example: `  harnessctl ls
  harnessctl ls --state awaiting_approval,awaiting_input
  harnessctl ls --conversation conv_3f9a… --all
  harnessctl ls --all --json | jq -r 'select(.state=="running") | .id'`,
		Args: cobra.NoArgs,
	}
	flags := cmd.Flags()
	flags.StringSliceVar(&states, "state", nil, "only executions in these states (queued, running, awaiting_approval, awaiting_input, cancelling, succeeded, failed, cancelled)")
	flags.StringVar(&conversation, "conversation", "", "only the executions of this conversation")
	flags.IntVar(&limit, "limit", 20, "rows on one page (the server allows at most 200)")
	flags.BoolVar(&all, "all", false, "list every page, not only the first")
	var after string
	flags.StringVar(&after, "after", "", "start after this cursor (the nextCursor a previous page printed)")

	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if limit < 1 {
			return a.usageError(cmd, "ls: --limit must be at least 1")
		}
		filter := make(api.ListState, 0, len(states))
		for _, s := range states {
			state := api.ExecutionState(strings.TrimSpace(s))
			if !state.Valid() {
				return a.usageError(cmd, fmt.Sprintf("ls: unknown state %q", s))
			}
			filter = append(filter, state)
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		ctx := context.Background()
		fetch := func(after string) (page[api.Execution], error) {
			var state *api.ListState
			if len(filter) > 0 {
				state = &filter
			}
			var cursor *string
			if after != "" {
				cursor = &after
			}
			var list api.ExecutionList
			var err error
			if conversation != "" {
				list, err = c.ListConversationExecutions(ctx, conversation, &api.ListConversationExecutionsParams{State: state, After: cursor, Limit: &limit})
			} else {
				list, err = c.ListExecutions(ctx, &api.ListExecutionsParams{State: state, After: cursor, Limit: &limit})
			}
			return page[api.Execution]{whole: list, rows: list.Executions, next: list.NextCursor}, err
		}
		failed := func(err error) int {
			if a.lacksListing(ctx, c, err) {
				fmt.Fprintf(a.stderr, "harnessctl: %s is a Harness Runtime API server without listing: listing executions "+
					"(GET /v1/executions) is a harness-edge extension that this server lacks (it answered %v).\n"+
					"harnessctl: follow an execution by its id instead: harnessctl get|watch|events EXECUTION_ID\n", a.currentBase, err.(*sdk.Error).StatusCode)
				return exitError
			}
			return a.fail(err)
		}
		return listingPrinter[api.Execution]{
			noun:   "executions",
			again:  "harnessctl ls",
			header: "ID\tSTATE\tPROVIDER\tCONVERSATION\tCREATED",
			row: func(x api.Execution) string {
				return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", x.ID, x.State, x.ProviderID, x.ConversationID, x.CreatedAt)
			},
		}.print(a.stdout, a.stderr, g.json, all, after, fetch, failed)
	})
	return cmd
}
