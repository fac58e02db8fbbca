package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversations listing and rename are harness-edge extensions (GET /v1/conversations,
// PATCH /v1/conversations/{id}); `conversation ls`, `show` and `rename`, and `chat TITLE`, use
// them.

// conversationRef is how a command names a conversation: its id (conv_…) or its title.
const conversationRef = "CONVERSATION_ID|TITLE"

// resolveConversation is the id of the conversation ref names: ref itself when it is an id,
// else the one conversation whose title is exactly ref. Several with that title is an error
// naming them (titles are not unique); none is an error too.
func (a *app) resolveConversation(ctx context.Context, c *sdk.Client, ref string) (string, error) {
	if strings.HasPrefix(ref, "conv_") {
		return ref, nil
	}
	var matches []string
	for conv, err := range c.AllConversations(ctx, nil) {
		if err != nil {
			return "", err
		}
		if conv.Title != nil && *conv.Title == ref {
			matches = append(matches, conv.ID)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no conversation is titled %q (harnessctl conversation ls lists them)", ref)
	case 1:
		return matches[0], nil
	}
	return "", fmt.Errorf("%d conversations are titled %q: %s; name one by its id", len(matches), ref, strings.Join(matches, ", "))
}

func newConversationListCommand(a *app, g *globals) *cobra.Command {
	var (
		limit    int
		all      bool
		after    string
		key      string
		value    string
		activeAt string
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "list your conversations, most recently active first",
		Long: `Lists the conversations of the caller (its tenant), most recently active first: id, title,
number of turns, the state of the last one, last activity and the start of its input. --key
keeps those whose metadata has the key (--value: with that string value), --since those
active at or after a time. One page of --limit rows; --all walks every page. With --json,
prints the page as the server sends it, or one conversation per line with --all.`,
		Example: `  harnessctl conversation ls
  harnessctl conversations ls --key project --value lisbon --all
  harnessctl conversation ls --since 2026-12-01T00:00:00Z --json`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 20, "rows on one page (the server allows at most 200)")
	f.BoolVar(&all, "all", false, "list every page, not only the first")
	f.StringVar(&after, "after", "", "start after this cursor (the nextCursor a previous page printed)")
	f.StringVar(&key, "key", "", "only conversations whose metadata has this `key`")
	f.StringVar(&value, "value", "", "with --key: only those whose value there is this `string`")
	f.StringVar(&activeAt, "since", "", "only conversations active at or after this RFC 3339 `time`")
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if limit < 1 {
			return a.usageError(cmd, "conversation ls: --limit must be at least 1")
		}
		if value != "" && key == "" {
			return a.usageError(cmd, "conversation ls: --value needs --key")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		params := api.ListConversationsParams{Limit: &limit}
		if key != "" {
			params.MetadataKey = &key
		}
		if value != "" {
			params.MetadataValue = &value
		}
		if activeAt != "" {
			params.ActiveAfter = &activeAt
		}
		fetch := func(after string) (page[api.ConversationSummary], error) {
			params.After = nil
			if after != "" {
				params.After = &after
			}
			list, err := c.ListConversations(context.Background(), &params)
			return page[api.ConversationSummary]{whole: list, rows: list.Conversations, next: list.NextCursor}, err
		}
		return listingPrinter[api.ConversationSummary]{
			noun:   "conversations",
			again:  "harnessctl conversation ls",
			header: "ID\tTITLE\tTURNS\tLAST\tACTIVE\tINPUT",
			row:    conversationRow,
		}.print(a.stdout, a.stderr, g.json, all, after, fetch, a.fail)
	})
	return cmd
}

// conversationRow is one tab-separated row of conversation ls.
func conversationRow(x api.ConversationSummary) string {
	title, last, input := "-", "-", "-"
	if x.Title != nil {
		title = oneLine(*x.Title, 40)
	}
	if x.LatestExecution != nil {
		last, input = string(x.LatestExecution.State), oneLine(x.LatestExecution.InputPreview, 40)
	}
	return fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s", x.ID, title, x.ExecutionCount, last, x.LastActivityAt, input)
}

// oneLine is s on one line (a tab or a newline would break the table), at most max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func newConversationRenameCommand(a *app, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rename " + conversationRef + " NEW_TITLE",
		Short: "give a conversation a title (\"\" removes it)",
		Example: `  harnessctl conversation rename conv_5d1e… "Trip to Lisbon"
  harnessctl conversation rename "Trip to Lisbon" "Lisbon, May"`,
	}
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 2 {
			return a.usageError(cmd, "conversation rename: want %s and NEW_TITLE", conversationRef)
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
		conv, err := c.RenameConversation(ctx, id, args[1])
		if err != nil {
			return a.fail(err)
		}
		a.printConversation(g, conv)
		return exitOK
	})
	return cmd
}
