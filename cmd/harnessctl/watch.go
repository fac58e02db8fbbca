package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
)

func newWatchCommand(a *app, g *globals) *cobra.Command {
	var answers answerFlags
	var stream streamFlags
	cmd := &cobra.Command{
		Use:     "watch EXECUTION_ID | CONVERSATION_ID | --all",
		Aliases: []string{"tail"},
		Short:   "attach to an execution: print its text, answer its requests, end with it",
		Long: `Prints the execution's text so far and then as it arrives, asks its approval and input
requests at the terminal as run does (a question already open when you attach is asked
too), and exits when the execution ends, with run's exit codes: 0 succeeded, 3 failed,
4 cancelled.

` + answerFlagsHelp + `

End of input at a question leaves that question unanswered (the execution keeps waiting
for someone else's answer). Ctrl-C stops watching and leaves the execution alone (exit
code 1); 'harnessctl cancel' cancels it.

With a conversation id (conv_…) it follows the whole conversation instead — every event of
every execution in it, those started later too — and with --all everything your tenant may
see, one line per event, until Ctrl-C (exit 0). Neither has an end of its own. --lifecycle
keeps starts, approvals and terminals only; --type and --provider narrow further; --json
prints each event with its cursor, which --after takes to go on exactly from there. Cuts and
server restarts are resumed without a lost or repeated event.`,
		Example: `  harnessctl watch exec_3f9a…
  harnessctl tail --approve exec_3f9a…
  harnessctl watch --json exec_3f9a… | jq -r .state
  harnessctl watch conv_7c1e…
  harnessctl watch --all --lifecycle
  harnessctl watch --all --json --after 3f9a0c11b2de-1042 | jq -c .event`,
	}
	answers.register(cmd)
	stream.register(cmd)
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		switch {
		case stream.all && len(args) == 0:
			return a.watchStream(g, &stream, "")
		case stream.all:
			return a.usageError(cmd, "watch: --all takes no id")
		case len(args) == 1 && isConversationID(args[0]):
			if cmd.Flags().Changed("conversation") {
				return a.usageError(cmd, "watch: --conversation goes with --all")
			}
			return a.watchStream(g, &stream, args[0])
		case stream.used(cmd):
			return a.usageError(cmd, "watch: --after, --lifecycle, --type, --provider and --conversation follow a conversation or --all, not one execution")
		}
		if len(args) != 1 {
			return a.usageError(cmd, "watch: want exactly one EXECUTION_ID")
		}
		policy, err := answers.policy(cmd)
		if err != nil {
			return a.usageError(cmd, "watch: %v", err)
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		interrupts, stopInterrupts := a.interrupts()
		defer stopInterrupts()
		ctx := context.Background()
		exec, err := c.GetExecution(ctx, args[0])
		if err != nil {
			return a.fail(err)
		}
		fl := newFollower(a, g, c, exec.ID, policy)
		fl.catchingUp = true
		end := "Ctrl-C stops watching"
		if sdk.IsTerminalState(exec.State) {
			end = "it has ended"
		}
		fl.notice("harnessctl: watching execution %s (%s); %s\n", exec.ID, exec.State, end)
		return fl.follow(ctx, interrupts, 0)
	})
	return cmd
}
