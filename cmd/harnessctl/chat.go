package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// chat is run in a loop over one conversation: each line typed is the next turn (an execution
// in the conversation, README "A chat: one conversation, message after message"), its reply
// printed as it arrives by the follower that run uses. What a line typed while a turn runs
// means is the conversation's busy policy (docs/protocol.md §15.7). The session itself — the
// lines, the turns, Ctrl-C — is chat_session.go.

const chatLong = `A conversation, message after message: each line you type is the next turn, an execution
in the conversation, and its reply is printed as it arrives. Without CONVERSATION_ID a new
conversation is created; with one (its id, or its exact title), chat continues it: the last
turns are shown (--history of them) and a turn that has not ended is followed.

While a turn runs you can type the next line. What it does is the conversation's busy
policy, chosen with --policy when chat creates the conversation (default enqueue):
  enqueue    the line is sent and waits its turn: its reply follows the running one's
  reject     the conversation is busy: the line is not sent but kept, and an empty line
             sends it once the running turn has ended
  interrupt  the running turn is cancelled and the line is answered instead
  parallel   the line runs at once beside the running turn; its reply is printed after
On a conversation that exists, --policy overrides its own policy for the turns this chat
sends (each start carries it); without --policy the conversation's applies.

Approval and input requests are asked inline, as run asks them (y approves, n denies,
anything else is asked again): while a question is open, the line you type is its answer,
not a message. ` + answerFlagsHelp + `

At a terminal the line you type is edited on a line of its own under the replies: what
streams meanwhile goes above it, never into it.

Ctrl-C while a turn runs cancels that turn (its execution; turns queued behind it go on)
and comes back to the prompt; a second Ctrl-C stops waiting for the cancellation. Ctrl-C or
Ctrl-D at the prompt leaves the chat; the conversation stays, and the command that continues
it is printed. When input is not a terminal (lines piped in), each line is read once the
previous reply has ended, and the end of input leaves the chat.

--provider, --config and --require apply to every turn; continuing a conversation without
--provider uses the provider of its last turn. The reply goes to stdout, the prompt and
notices to stderr; with --json each turn's final execution is printed instead of its text.
The exit code is 0 once the chat is left, 1 when it could not start (no server, an unknown
conversation).`

func newChatCommand(a *app, g *globals) *cobra.Command {
	var provider, config, policyName string
	var require []string
	var history int
	var answers answerFlags
	cmd := &cobra.Command{
		Use:   "chat [CONVERSATION_ID|TITLE]",
		Short: "a conversation at the terminal: each line is the next turn, its reply streamed",
		Long:  chatLong,
		Example: `  harnessctl chat
  harnessctl chat --policy reject --provider claude
  harnessctl chat conv_5d1e…
  harnessctl chat "Trip to Lisbon"
  harnessctl chat --config '{"requireApproval":true}'
  printf 'hello\nand again\n' | harnessctl chat`,
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "provider `id` of each turn (default: the last turn's when continuing, else mock)")
	f.StringVar(&config, "config", "", "provider config of each turn as a JSON `object`")
	f.StringArrayVar(&require, "require", nil, "required `capability` of each turn (repeatable)")
	f.StringVar(&policyName, "policy", "", "busy `policy`: enqueue, reject, interrupt or parallel (a new conversation's, default enqueue; on one that exists, an override for this chat's turns)")
	f.IntVar(&history, "history", 10, "when continuing, show the last `N` turns (0: none)")
	answers.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("provider", a.completeProviders(g))
	_ = cmd.RegisterFlagCompletionFunc("policy", cobra.FixedCompletions(
		[]string{"enqueue", "reject", "interrupt", "parallel"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) > 1 {
			return a.usageError(cmd, "chat: want at most one CONVERSATION_ID")
		}
		var policy *api.BusyPolicy
		if policyName != "" {
			p := api.BusyPolicy(policyName)
			if !p.Valid() {
				return a.badValue(cmd, "chat: --policy %q: want enqueue, reject, interrupt or parallel", policyName)
			}
			policy = &p
		}
		if history < 0 {
			return a.badValue(cmd, "chat: --history %d: want a number of turns, 0 or more", history)
		}
		cfg, err := parseObject("config", config)
		if err != nil {
			return a.badValue(cmd, "chat: %v", err)
		}
		answerPolicy, err := answers.policy(cmd)
		if err != nil {
			return a.usageError(cmd, "chat: %v", err)
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		// From here on Ctrl-C is the chat's: it cancels a turn, or leaves at the prompt.
		interrupts, stopInterrupts := a.interrupts()
		defer stopInterrupts()
		ctx := context.Background()

		s := &chatSession{a: a, g: g, client: c, answers: answerPolicy, lines: &prompter{in: a.stdin},
			interactive: isTerminal(a.stdin), changed: make(chan struct{}), over: make(chan struct{})}
		s.turn = api.StartExecutionRequest{ProviderID: provider}
		if cfg != nil {
			s.turn.Config = *cfg
		}
		if len(require) > 0 {
			s.turn.RequiredCapabilities = &require
		}
		if len(args) == 0 {
			if policy == nil {
				policy = new(api.BusyPolicyEnqueue)
			}
			if s.conv, err = c.NewConversation(ctx, *policy, api.JSONObject{"client": "harnessctl"}); err != nil {
				return a.fail(err)
			}
			s.introduce(policy, false)
		} else {
			id, err := a.resolveConversation(ctx, c, args[0])
			if err != nil {
				return a.fail(err)
			}
			if s.conv, err = c.ContinueConversation(ctx, id); err != nil {
				return a.fail(err)
			}
			s.turn.BusyPolicy = policy // an override: the conversation keeps its own
			s.introduce(policy, true)
			if err := s.continueFrom(ctx, history); err != nil {
				return a.fail(err)
			}
		}
		if s.turn.ProviderID == "" {
			s.turn.ProviderID = "mock"
		}
		// At a terminal the chat edits its input line itself, below the replies; everything it
		// prints goes through the editor (replies and notices share the terminal).
		if s.interactive && sameTerminal(a.stdout, a.stderr) {
			if screen := newChatTerminal(a.stdin, a.stdout); screen != nil {
				defer screen.close()
				edited := *a
				edited.stdout, edited.stderr = screen.replies(), screen.notices()
				s.a, s.screen, s.lines.editor = &edited, screen, screen
			}
		}
		return s.run(ctx, interrupts)
	})
	return cmd
}

// introduce says which conversation this is and what a line typed during a turn does.
func (s *chatSession) introduce(override *api.BusyPolicy, continued bool) {
	own := s.conv.BusyPolicy
	what := "new conversation"
	if continued {
		what = "conversation"
	}
	var policy api.BusyPolicy
	var whose string
	switch {
	case continued && override != nil:
		policy, whose = *override, "this chat's, over the conversation's "+string(orParallel(own))
	case own != nil:
		policy, whose = *own, "the conversation's"
	case !continued:
		// Asked for, not honoured: a server without the busy-policy extension drops the field.
		policy, whose = api.BusyPolicyParallel, "this server keeps no busy policy"
	default:
		policy, whose = api.BusyPolicyParallel, "the default"
	}
	s.policy = policy
	fmt.Fprintf(s.a.stderr, "harnessctl: %s %s, busy policy %s (%s): %s\n", what, s.conv.ID, policy, whose, policyMeaning(policy))
	fmt.Fprintf(s.a.stderr, "harnessctl: Enter sends a line; Ctrl-C cancels the running turn; Ctrl-D or Ctrl-C at the prompt leaves\n")
}

func orParallel(p *api.BusyPolicy) api.BusyPolicy {
	if p == nil {
		return api.BusyPolicyParallel
	}
	return *p
}

// policyMeaning is what a line typed while a turn runs does under p.
func policyMeaning(p api.BusyPolicy) string {
	switch p {
	case api.BusyPolicyEnqueue:
		return "a line typed while a turn runs waits its turn"
	case api.BusyPolicyReject:
		return "a line typed while a turn runs is refused and kept (an empty line sends it again)"
	case api.BusyPolicyInterrupt:
		return "a line typed while a turn runs cancels it and is answered instead"
	}
	return "a line typed while a turn runs runs beside it (its reply is printed after)"
}

// continueFrom shows the conversation's last turns (at most n), queues the turns that have not
// ended to be followed, and takes the last turn's provider when --provider was not given.
func (s *chatSession) continueFrom(ctx context.Context, n int) error {
	recent, more, err := s.recentTurns(ctx, max(n, 1))
	if s.a.lacksListing(ctx, s.client, err) {
		fmt.Fprintf(s.a.stderr, "harnessctl: this server does not list a conversation's executions (a harness-edge extension): no history shown\n")
		return nil
	}
	if err != nil {
		return err
	}
	if s.turn.ProviderID == "" && len(recent) > 0 {
		s.turn.ProviderID = recent[len(recent)-1].ProviderID
	}
	if n == 0 {
		recent, more = nil, len(recent) > 0
	}
	if more {
		fmt.Fprintf(s.a.stderr, "harnessctl: earlier turns are not shown (--history N shows the last N)\n")
	}
	for _, exec := range recent {
		if sdk.IsTerminalState(exec.State) {
			printTurn(s.a.stdout, exec)
		}
	}
	unfinished, err := s.conv.Unfinished(ctx)
	if err != nil {
		return err
	}
	for _, exec := range unfinished {
		s.queue = append(s.queue, chatTurn{exec: exec, announce: fmt.Sprintf("> %s", exec.Input),
			why: fmt.Sprintf("%s (%s) has not ended: following it; Ctrl-C cancels it", exec.ID, exec.State)})
	}
	return nil
}

// recentTurns is the conversation's newest n executions, oldest first, and whether older ones
// exist.
func (s *chatSession) recentTurns(ctx context.Context, n int) ([]api.Execution, bool, error) {
	var turns []api.Execution
	more := false
	limit := min(n, 200) // the listing's largest page
	for exec, err := range s.client.AllConversationExecutions(ctx, s.conv.ID, &api.ListConversationExecutionsParams{Limit: &limit}) {
		if err != nil {
			return nil, false, err
		}
		if len(turns) == n {
			more = true
			break
		}
		turns = append(turns, exec)
	}
	slices.Reverse(turns) // the listing is newest first
	return turns, more, nil
}

// printTurn prints an ended turn of the history: what was asked, and what came of it.
func printTurn(w io.Writer, exec api.Execution) {
	fmt.Fprintf(w, "> %s\n", exec.Input)
	switch {
	case exec.State == api.ExecutionStateSucceeded && exec.FinalOutput != nil:
		fmt.Fprintln(w, *exec.FinalOutput)
	case exec.State == api.ExecutionStateFailed && exec.Error != nil:
		fmt.Fprintf(w, "(failed: %s: %s)\n", exec.Error.Code, exec.Error.Message)
	case exec.State == api.ExecutionStateCancelled:
		fmt.Fprintf(w, "(%s)\n", cancelledTurn(exec))
	default:
		fmt.Fprintf(w, "(%s)\n", exec.State)
	}
}

// sameTerminal reports whether stdout and stderr are both terminals (the chat's editor owns
// them both; with either redirected, chat prints as before).
func sameTerminal(stdout, stderr io.Writer) bool {
	for _, w := range []io.Writer{stdout, stderr} {
		if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
			return false
		}
	}
	return true
}

// isTerminal reports whether r is a terminal (a character device): then lines are read while a
// turn runs too, and the prompt is shown. /dev/null is one as well; it ends at once.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
