package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

var conversationCommand = command{
	name:    "conversation",
	args:    "create | get CONVERSATION_ID",
	summary: "create or show a conversation",
	help: `A conversation groups executions; 'harnessctl run' creates one unless given --conversation.

Examples:
  harnessctl conversation create
  harnessctl conversation create --metadata '{"ticket":"OPS-42"}' --json | jq -r .id
  harnessctl conversation get conv_5d1e…`,
	run: (*app).conversation,
}

func (a *app) conversation(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "conversation")
	metadata := fs.String("metadata", "", "create: metadata as a JSON `object`")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	// Flags may also follow the verb: conversation create --metadata '{…}'.
	verb, rest := fs.Arg(0), fs.Args()
	if len(rest) > 0 {
		rest = rest[1:]
	}
	if code, ok := a.parse(fs, cmd, rest); !ok {
		return code
	}
	rest = fs.Args()
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}
	var conv api.Conversation
	switch {
	case verb == "create" && len(rest) == 0:
		md, err := parseObject("metadata", *metadata)
		if err != nil {
			return a.usageError("conversation create: %v", err)
		}
		conv, err = c.CreateConversation(context.Background(), api.CreateConversationRequest{Metadata: md})
		if err != nil {
			return a.fail(err)
		}
	case verb == "get" && len(rest) == 1:
		conv, err = c.GetConversation(context.Background(), rest[0])
		if err != nil {
			return a.fail(err)
		}
	default:
		return a.usageError("conversation: want 'create' or 'get CONVERSATION_ID'")
	}
	if g.json {
		printJSON(a.stdout, conv)
		return exitOK
	}
	md, _ := json.Marshal(conv.Metadata)
	fmt.Fprintf(a.stdout, "%-14s %s\n%-14s %s\n%-14s %s\n", "id:", conv.Id, "created:", conv.CreatedAt, "metadata:", md)
	return exitOK
}

var runtimeCommand = command{
	name:    "runtime",
	args:    "",
	summary: "describe the server: name, version, protocol version, providers",
	help: `Examples:
  harnessctl runtime
  harnessctl runtime --json | jq -r '.providers[].id'`,
	run: (*app).runtime,
}

func (a *app) runtime(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "runtime")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return a.usageError("runtime takes no arguments")
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
		fmt.Fprintf(a.stdout, "  provider %-12s %s %s (%s)\n", p.Id, p.Name, p.Version, joinTopologies(p.Topologies))
	}
	return exitOK
}

var capabilitiesCommand = command{
	name:    "capabilities",
	args:    "",
	summary: "list each provider's capabilities and support levels",
	help: `Support levels are native, emulated, degraded or unsupported; a capability a provider does
not list is unsupported. Starting an execution that requires an unsupported capability
fails with CAPABILITY_UNSUPPORTED.

Examples:
  harnessctl capabilities
  harnessctl capabilities --json | jq '.providers[] | select(.id=="mock").capabilities'`,
	run: (*app).capabilities,
}

func (a *app) capabilities(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "capabilities")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return a.usageError("capabilities takes no arguments")
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
		fmt.Fprintf(a.stdout, "%s — %s %s (%s)\n", m.Id, m.Name, m.Version, joinTopologies(m.Topologies))
		for _, name := range slices.Sorted(maps.Keys(m.Capabilities)) {
			fmt.Fprintf(a.stdout, "  %-26s %s\n", name, m.Capabilities[name])
		}
	}
	return exitOK
}

func joinTopologies(ts []api.RuntimeTopology) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
