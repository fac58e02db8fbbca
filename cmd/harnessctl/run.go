package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func newRunCommand(a *app, g *globals) *cobra.Command {
	var provider, conversation, config, key string
	var require []string
	var answers answerFlags
	cmd := &cobra.Command{
		Use:   "run INPUT...",
		Short: "start an execution, print its text as it arrives, answer its requests at the terminal",
		Long: `The words of INPUT are joined by spaces into the execution's input; flags may come before
or after them (an input word that starts with "-" goes after "--"). A conversation is created
unless --conversation names one.

When the execution asks for approval, harnessctl asks you: y (or yes) approves, n (no, or
an empty line) denies, and anything else is asked again. When it asks for input, the line you type is the answer. End of input (Ctrl-D)
at a question cancels the execution. While a question is open the events keep coming: when
the action is answered elsewhere or the execution ends, the question is withdrawn (a line
says why) and a line you type for it is not taken as the answer to a later question.

` + answerFlagsHelp + `

Ctrl-C cancels the execution and waits until it is cancelled (no more text is printed from
then on); a second Ctrl-C stops waiting.

Text goes to stdout, questions and notices (the artifacts made included) to stderr. With
--json, the text is not printed; the final execution is, as JSON, once it has ended.

The exit code says how the execution ended: 0 succeeded, 3 failed, 4 cancelled
(1 when harnessctl could not run it at all).`,
		Example: `  harnessctl run "hello runtime"
  harnessctl run "deploy the site" --provider mock --config '{"requireApproval":true}'
  harnessctl run --config '{"requestInput":true}' --require action.input "greet"
  harnessctl run --approve --input blue --config '{"requireApproval":true,"requestInput":true}' "hi"
  harnessctl run --json "hello" | jq .finalOutput`,
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "mock", "provider `id`")
	f.StringVar(&conversation, "conversation", "", "run in this conversation `id` (default: a new one)")
	f.StringVar(&config, "config", "", "provider config as a JSON `object`")
	f.StringVar(&key, "key", "", "idempotency `key`: repeating the command with the same key does not start a second execution")
	f.StringArrayVar(&require, "require", nil, "required `capability` (repeatable), e.g. action.approval")
	answers.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("provider", a.completeProviders(g))
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) == 0 {
			return a.usageError(cmd, "run: INPUT is missing")
		}
		cfg, err := parseObject("config", config)
		if err != nil {
			return a.badValue(cmd, "run: %v", err)
		}
		policy, err := answers.policy(cmd)
		if err != nil {
			return a.usageError(cmd, "run: %v", err)
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}

		// Take Ctrl-C before anything can start: from here on it cancels instead of killing.
		interrupts, stopInterrupts := a.interrupts()
		defer stopInterrupts()
		ctx := context.Background()

		if conversation == "" {
			conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{Metadata: &api.JSONObject{"client": "harnessctl"}})
			if err != nil {
				return a.fail(err)
			}
			conversation = conv.ID
		}
		req := api.StartExecutionRequest{ConversationID: conversation, ProviderID: provider, Input: strings.Join(args, " ")}
		if cfg != nil {
			req.Config = *cfg
		}
		if len(require) > 0 {
			req.RequiredCapabilities = &require
		}
		if key != "" {
			req.IdempotencyKey = &key
		}
		exec, err := c.StartExecution(ctx, req)
		if err != nil {
			return a.fail(err)
		}
		fl := newFollower(a, g, c, exec.ID, policy)
		fl.interruptCancels, fl.eofCancels = true, true
		fl.notice("harnessctl: execution %s started; Ctrl-C cancels it\n", exec.ID)
		return fl.follow(ctx, interrupts, 0)
	})
	return cmd
}

// completeProviders completes --provider with the ids the server describes (the server being
// --base or $HARNESS_URL as typed so far); nothing when it cannot be asked quickly.
func (a *app) completeProviders(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := a.client(g)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d, err := c.DescribeRuntime(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, p := range d.Providers {
			ids = append(ids, p.ID+"\t"+p.Name)
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}
