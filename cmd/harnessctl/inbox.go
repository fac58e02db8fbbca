package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// inbox and rules use the approvals extension (GET /v1/actions, /v1/action-rules;
// docs/protocol.md, "Approvals").

func newInboxCommand(a *app, g *globals) *cobra.Command {
	var provider, conversation string
	var limit int
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "list the actions waiting for an answer, oldest first",
		Long: `Lists the pending actions of your tenant across executions, oldest first: one row each with
the action's id, kind, title, how long it has waited, when it expires, its execution and
provider. --provider and --conversation narrow it. With --json prints the listed actions,
one per line. Answer one with 'harnessctl inbox answer ACTION_ID'.

The inbox is a harness-edge extension: against a server without it (the reference), inbox says
so.`,
		Example: `  harnessctl inbox
  harnessctl inbox --provider claude
  harnessctl inbox answer action_77c1… --approve
  harnessctl inbox answer action_77c1… --reject --message "not on production"`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "only actions of executions on this provider")
	f.StringVar(&conversation, "conversation", "", "only actions of this conversation")
	f.IntVar(&limit, "limit", 200, "at most this many rows")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		ctx := context.Background()
		params := &api.ListActionsParams{}
		if provider != "" {
			params.ProviderID = &provider
		}
		if conversation != "" {
			params.ConversationID = &conversation
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		rows := 0
		for item, err := range c.AllPendingActions(ctx, params) {
			if err != nil {
				_ = tw.Flush()
				if a.lacksListing(ctx, c, err) {
					fmt.Fprintf(a.stderr, "harnessctl: %s is a Harness Runtime API server without the inbox (GET /v1/actions is a harness-edge extension)\n", a.currentBase)
					return exitError
				}
				return a.fail(err)
			}
			if g.json {
				printJSONLine(a.stdout, item)
			} else {
				if rows == 0 {
					fmt.Fprintln(tw, "ACTION\tKIND\tTITLE\tWAITING\tEXPIRES\tEXECUTION\tPROVIDER")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", item.Action.ID, item.Action.Kind, item.Action.Title,
					since(item.Action.CreatedAt), expiry(item.Action.ExpiresAt), item.Action.ExecutionID, item.ProviderID)
			}
			if rows++; rows == limit {
				break
			}
		}
		_ = tw.Flush()
		if rows == 0 && !g.json {
			fmt.Fprintln(a.stdout, "Nothing is waiting for an answer.")
		}
		return exitOK
	})
	cmd.AddCommand(newInboxAnswerCommand(a, g))
	return cmd
}

// since is how long ago a timestamp was, rounded for people.
func since(ts api.Timestamp) string {
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return ts
	}
	return time.Since(t).Round(time.Second).String()
}

func expiry(ts *api.Timestamp) string {
	if ts == nil {
		return "-"
	}
	t, err := time.Parse(time.RFC3339, *ts)
	if err != nil {
		return *ts
	}
	return "in " + time.Until(t).Round(time.Second).String()
}

func newInboxAnswerCommand(a *app, g *globals) *cobra.Command {
	var approve, reject bool
	var message, edit, respond, option string
	cmd := &cobra.Command{
		Use:   "answer ACTION_ID",
		Short: "answer a pending action from the inbox",
		Long: `Answers one pending action, found in the inbox by its id, with one typed decision:
--approve, --reject (with --message, what the agent is told), --edit JSON (approve with the
action's arguments changed: the whole object), --respond TEXT (an input's answer), or
--option ID (one of the agent's own options; an *_always option also creates a standing rule
for the conversation). --message goes with --approve, --reject, --edit or --option.`,
		Example: `  harnessctl inbox answer action_77c1… --approve
  harnessctl inbox answer action_77c1… --reject --message "use the staging database"
  harnessctl inbox answer action_77c1… --edit '{"command":"ls -la","cwd":"/tmp"}'
  harnessctl inbox answer action_77c1… --option allow-always
  harnessctl inbox answer action_9a02… --respond "blue"`,
		Args: cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.BoolVar(&approve, "approve", false, "approve")
	f.BoolVar(&reject, "reject", false, "reject (an approval) or decline (an input)")
	f.StringVar(&edit, "edit", "", "approve with these arguments, a JSON `object`")
	f.StringVar(&respond, "respond", "", "answer an input with `TEXT`")
	f.StringVar(&option, "option", "", "choose the agent's option `ID`")
	f.StringVar(&message, "message", "", "what the agent is told with the decision")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		var answer api.ActionResponse
		chosen := 0
		for _, set := range []bool{approve, reject, f.Changed("edit"), f.Changed("respond"), f.Changed("option")} {
			if set {
				chosen++
			}
		}
		if chosen != 1 {
			return a.usageError(cmd, "inbox answer: give exactly one of --approve, --reject, --edit, --respond, --option")
		}
		switch {
		case approve:
			answer = sdk.Approve()
		case reject:
			answer = sdk.Reject("")
		case f.Changed("edit"):
			args, err := parseObject("edit", edit)
			if err != nil || args == nil {
				return a.badValue(cmd, "inbox answer: %v", err)
			}
			answer = sdk.Edit(*args)
		case f.Changed("respond"):
			answer = sdk.Respond(respond)
		case f.Changed("option"):
			answer = sdk.ChooseOption(option)
		}
		if f.Changed("message") {
			answer.Message = &message
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		ctx := context.Background()
		var found *api.ListedAction
		for item, err := range c.AllPendingActions(ctx, nil) {
			if err != nil {
				return a.fail(err)
			}
			if item.Action.ID == args[0] {
				found = &item
				break
			}
		}
		if found == nil {
			fmt.Fprintf(a.stderr, "harnessctl: %s is not waiting for an answer in your inbox (answered, abandoned, or not yours)\n", args[0])
			return exitError
		}
		exec, err := c.RespondToAction(ctx, found.Action.ExecutionID, found.Action.ID, answer)
		if err != nil {
			return a.fail(err)
		}
		printExecution(a.stdout, g, exec)
		return exitOK
	})
	return cmd
}

func newRulesCommand(a *app, g *globals) *cobra.Command {
	var conversation string
	var active bool
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "list, add and revoke standing rules that answer approvals",
		Long: `Lists your tenant's standing rules, oldest first: the tenant's, the configured ones and every
conversation's (with --conversation, those that apply to it), revoked ones too unless
--active. A rule answers a matching approval at once: every action.responded it gives names
it as the actor.`,
		Example: `  harnessctl rules
  harnessctl rules add --tool-kind read --approve
  harnessctl rules add --conversation conv_3f9a… --title 'Run rm *' --reject --message "never"
  harnessctl rules revoke rule_5d2e…`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&conversation, "conversation", "", "only the rules that apply to this conversation")
	f.BoolVar(&active, "active", false, "leave revoked rules out")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		params := &api.ListActionRulesParams{}
		if conversation != "" {
			params.ConversationID = &conversation
		}
		if active {
			params.Active = &active
		}
		rules, err := c.ListActionRules(context.Background(), params)
		if err != nil {
			return a.fail(err)
		}
		if g.json {
			printJSON(a.stdout, api.ActionRuleList{Rules: rules})
			return exitOK
		}
		if len(rules) == 0 {
			fmt.Fprintln(a.stdout, "No standing rules.")
			return exitOK
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RULE\tDECISION\tMATCH\tSCOPE\tSOURCE\tREVOKED")
		for _, r := range rules {
			scope := string(r.Scope)
			if r.ConversationID != nil {
				scope = *r.ConversationID
			}
			revoked := "-"
			if r.RevokedAt != nil {
				revoked = *r.RevokedAt
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Decision, describeMatch(r.Match), scope, r.Source, revoked)
		}
		_ = tw.Flush()
		return exitOK
	})
	cmd.AddCommand(newRulesAddCommand(a, g), newRulesRevokeCommand(a, g))
	return cmd
}

func describeMatch(m api.ActionRuleMatch) string {
	var parts []string
	for _, p := range []struct {
		name  string
		value *string
	}{{"provider", m.ProviderID}, {"tool kind", m.ToolKind}, {"title", m.Title}} {
		if p.value != nil {
			raw, _ := json.Marshal(*p.value)
			parts = append(parts, p.name+" "+string(raw))
		}
	}
	return strings.Join(parts, ", ")
}

func newRulesAddCommand(a *app, g *globals) *cobra.Command {
	var in api.CreateActionRuleRequest
	var conversation, provider, toolKind, title, message string
	var approve, reject bool
	cmd := &cobra.Command{
		Use:   "add",
		Short: "put a standing rule in force",
		Long: `Adds a rule that answers matching approvals from now on: --approve or --reject, for the whole
tenant or one --conversation. It must name what it is about: --tool-kind (read, edit, delete,
move, search, execute, think, fetch, switch_mode, other) or --title, a pattern over the whole
title where * is any run of characters; --provider narrows it.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&conversation, "conversation", "", "only this conversation's approvals")
	f.StringVar(&provider, "provider", "", "only this provider's approvals")
	f.StringVar(&toolKind, "tool-kind", "", "approvals about this kind of tool")
	f.StringVar(&title, "title", "", "approvals whose title matches this `pattern` (* is any run of characters)")
	f.BoolVar(&approve, "approve", false, "approve them")
	f.BoolVar(&reject, "reject", false, "reject them")
	f.StringVar(&message, "message", "", "what the agent is told with each answer")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		switch {
		case approve == reject:
			return a.usageError(cmd, "rules add: give one of --approve or --reject")
		case approve:
			in.Decision = api.RuleDecisionApprove
		default:
			in.Decision = api.RuleDecisionReject
		}
		for _, p := range []struct {
			value string
			into  **string
		}{{conversation, &in.ConversationID}, {provider, &in.Match.ProviderID}, {toolKind, &in.Match.ToolKind}, {title, &in.Match.Title}, {message, &in.Message}} {
			if p.value != "" {
				v := p.value
				*p.into = &v
			}
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		rule, err := c.CreateActionRule(context.Background(), in)
		if err != nil {
			return a.fail(err)
		}
		return a.printRule(g, rule)
	})
	return cmd
}

func newRulesRevokeCommand(a *app, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke RULE_ID",
		Short: "end a standing rule (it stays listed, revoked)",
		Args:  cobra.ExactArgs(1),
		RunE: runs(func(cmd *cobra.Command, args []string) int {
			c, err := a.client(g)
			if err != nil {
				return a.fail(err)
			}
			rule, err := c.RevokeActionRule(context.Background(), args[0])
			if err != nil {
				return a.fail(err)
			}
			return a.printRule(g, rule)
		}),
	}
}

func (a *app) printRule(g *globals, r api.ActionRule) int {
	if g.json {
		printJSON(a.stdout, r)
		return exitOK
	}
	state := "in force"
	if r.RevokedAt != nil {
		state = "revoked at " + *r.RevokedAt
	}
	fmt.Fprintf(a.stdout, "%s: %s %s (%s)\n", r.ID, r.Decision, describeMatch(r.Match), state)
	return exitOK
}
