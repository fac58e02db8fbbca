package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func newConversationCommand(a *app, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "conversation create | ls | get|show CONVERSATION_ID|TITLE | rename CONVERSATION_ID|TITLE NEW_TITLE",
		Aliases: []string{"conversations"},
		Short:   "create, list, show or rename conversations",
		Long: `A conversation groups executions; 'harnessctl run' creates one unless given --conversation.
ls and rename use harness-edge extensions (GET /v1/conversations, PATCH /v1/conversations/{id});
get and rename take a conversation's id or its exact title.`,
		Example: `  harnessctl conversation create
  harnessctl conversation create --metadata '{"ticket":"OPS-42"}' --json | jq -r .id
  harnessctl conversations ls
  harnessctl conversation rename conv_5d1e… "Trip to Lisbon"
  harnessctl conversation show "Trip to Lisbon"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(a.usageError(cmd, "conversation: want 'create', 'ls', 'get CONVERSATION_ID' or 'rename CONVERSATION_ID NEW_TITLE'"))
		},
	}
	var metadata string
	create := &cobra.Command{
		Use:     "create",
		Short:   "create a conversation",
		Example: `  harnessctl conversation create --metadata '{"ticket":"OPS-42"}'`,
	}
	create.Flags().StringVar(&metadata, "metadata", "", "metadata as a JSON `object`")
	create.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 0 {
			return a.usageError(cmd, "conversation create takes no arguments")
		}
		md, err := parseObject("metadata", metadata)
		if err != nil {
			return a.badValue(cmd, "conversation create: %v", err)
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		conv, err := c.CreateConversation(context.Background(), api.CreateConversationRequest{Metadata: md})
		if err != nil {
			return a.fail(err)
		}
		a.printConversation(g, conv)
		return exitOK
	})
	get := &cobra.Command{
		Use:     "get " + conversationRef,
		Aliases: []string{"show"},
		Short:   "show a conversation",
		Example: `  harnessctl conversation get conv_5d1e…
  harnessctl conversation show "Trip to Lisbon"`,
	}
	get.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 1 {
			return a.usageError(cmd, "conversation get: want exactly one CONVERSATION_ID")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		id, err := a.resolveConversation(context.Background(), c, args[0])
		if err != nil {
			return a.fail(err)
		}
		conv, err := c.GetConversation(context.Background(), id)
		if err != nil {
			return a.fail(err)
		}
		a.printConversation(g, conv)
		return exitOK
	})
	cmd.AddCommand(create, get, newConversationListCommand(a, g), newConversationRenameCommand(a, g), newConversationRemoveCommand(a, g))
	return cmd
}

func (a *app) printConversation(g *globals, conv api.Conversation) {
	if g.json {
		printJSON(a.stdout, conv)
		return
	}
	md, _ := json.Marshal(conv.Metadata)
	fmt.Fprintf(a.stdout, "%-14s %s\n", "id:", conv.ID)
	if conv.Title != nil {
		fmt.Fprintf(a.stdout, "%-14s %s\n", "title:", *conv.Title)
	}
	fmt.Fprintf(a.stdout, "%-14s %s\n%-14s %s\n", "created:", conv.CreatedAt, "metadata:", md)
}

func newRuntimeCommand(a *app, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "describe the server: name, version, protocol version, providers",
		Long: `Asks GET <base>/v1/runtime: the quickest check that --base (or $HARNESS_URL) points at a
Harness Runtime API server.`,
		Example: `  harnessctl runtime
  harnessctl runtime --json | jq -r '.providers[].id'`,
	}
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 0 {
			return a.usageError(cmd, "runtime takes no arguments")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		d, err := c.DescribeRuntime(context.Background())
		if err != nil {
			return a.fail(err)
		}
		if g.json {
			printJSON(a.stdout, d)
			return exitOK
		}
		fmt.Fprintf(a.stdout, "%s %s (protocol %s) at %s\n", d.Name, d.Version, d.ProtocolVersion, a.baseURL(g))
		for _, p := range d.Providers {
			fmt.Fprintf(a.stdout, "  provider %-12s %s %s (%s)\n", p.ID, p.Name, p.Version, joinTopologies(p.Topologies))
		}
		return exitOK
	})
	return cmd
}

func newCapabilitiesCommand(a *app, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "capabilities",
		Short: "list each provider's capabilities and support levels",
		Long: `Support levels are native, emulated, degraded or unsupported; a capability a provider does
not list is unsupported. Starting an execution that requires an unsupported capability
fails with CAPABILITY_UNSUPPORTED.`,
		Example: `  harnessctl capabilities
  harnessctl capabilities --json | jq '.providers[] | select(.id=="mock").capabilities'`,
	}
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 0 {
			return a.usageError(cmd, "capabilities takes no arguments")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		manifests, err := c.ListCapabilities(context.Background())
		if err != nil {
			return a.fail(err)
		}
		if g.json {
			printJSON(a.stdout, map[string]any{"providers": manifests})
			return exitOK
		}
		for i, m := range manifests {
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			fmt.Fprintf(a.stdout, "%s — %s %s (%s)\n", m.ID, m.Name, m.Version, joinTopologies(m.Topologies))
			for _, name := range slices.Sorted(maps.Keys(m.Capabilities)) {
				fmt.Fprintf(a.stdout, "  %-26s %s\n", name, m.Capabilities[name])
			}
		}
		return exitOK
	})
	return cmd
}

func joinTopologies(ts []api.RuntimeTopology) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
