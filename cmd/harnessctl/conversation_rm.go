package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
)

// `conversation rm` erases a conversation (DELETE /v1/conversations/{id}, an extension).

func newConversationRemoveCommand(a *app, g *globals) *cobra.Command {
	var cancelRunning bool
	cmd := &cobra.Command{
		Use:     "rm " + conversationRef,
		Aliases: []string{"delete"},
		Short:   "delete a conversation with everything of it, for good",
		Long: `Deletes a conversation and everything of it on the server: its executions, their events,
artifacts and approvals, its standing rules, and what agents keep for it. Usage totals stay.
The id answers "not found" from then on and is never used again. A conversation with a turn
still running is refused; --cancel cancels its turns first. With --json, prints what the
server answered (the conversation's id, when, how many executions went with it).`,
		Example: `  harnessctl conversation rm conv_5d1e…
  harnessctl conversations rm "Trip to Lisbon" --cancel`,
	}
	cmd.Flags().BoolVar(&cancelRunning, "cancel", false, "cancel the conversation's running turns first")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 1 {
			return a.usageError(cmd, "conversation rm: want one %s", conversationRef)
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		ctx := context.Background()
		id, err := a.resolveConversation(ctx, c, args[0])
		if err != nil {
			return a.fail(err)
		}
		d, err := c.DeleteConversation(ctx, id, sdk.DeleteOptions{CancelRunning: cancelRunning})
		if err != nil {
			code := a.fail(err)
			if errors.Is(err, sdk.ErrConversationBusy) {
				fmt.Fprintf(a.stderr, "harnessctl: add --cancel to cancel its running turns and delete it\n")
			}
			return code
		}
		if g.json {
			printJSON(a.stdout, d)
			return exitOK
		}
		fmt.Fprintf(a.stdout, "deleted %s (%d executions)\n", d.ConversationID, d.Executions)
		return exitOK
	})
	return cmd
}
