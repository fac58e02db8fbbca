package a2a

import (
	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The Go A2A SDK this provider speaks through (the manifest names it; config_test.go checks the
// version against go.mod). The A2A version spoken is the agent card's (card.go).
const (
	sdkModule  = "github.com/a2aproject/a2a-go/v2"
	sdkVersion = "2.2.1"
)

// Manifest is derived from the agent card (see docs/a2a.md, "Manifest"). Until the card has
// been read it is a stand-in that declares no capability, so that a start requiring any fails
// its preflight rather than being promised something unknown; the provider is registered again
// with the real manifest once the card arrives (Agent.Watch).
func (p *Provider) Manifest() api.ProviderManifest {
	card, iface, _, ok := p.agent.current()
	if !ok {
		metadata := api.JSONObject{"agent": p.agent.s.label, "agentCard": "not read yet", "sdk": sdkModule, "sdkVersion": sdkVersion}
		return api.ProviderManifest{
			ID:              p.agent.s.id,
			Name:            "A2A agent at " + p.agent.s.label + " (agent card not read yet)",
			Version:         "0.0.0",
			ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
			Topologies:      []api.RuntimeTopology{api.RuntimeTopologyRemote},
			Capabilities:    map[string]api.SupportLevel{},
			Metadata:        &metadata,
		}
	}
	return manifestFromCard(p.agent.s.id, p.agent.s.label, card, iface)
}

func manifestFromCard(id, label string, card *a2a.AgentCard, iface *a2a.AgentInterface) api.ProviderManifest {
	name := card.Name
	if name == "" {
		name = "A2A agent at " + label
	}
	version := card.Version
	if version == "" {
		version = "0.0.0"
	}
	streaming := api.SupportLevelEmulated // followed by polling GetTask
	if card.Capabilities.Streaming {
		streaming = api.SupportLevelNative
	}
	skills := make([]any, 0, len(card.Skills))
	for _, s := range card.Skills {
		skill := map[string]any{"id": s.ID, "name": s.Name}
		if s.Description != "" {
			skill["description"] = s.Description
		}
		if len(s.Tags) > 0 {
			skill["tags"] = jsonStrings(s.Tags)
		}
		if len(s.InputModes) > 0 {
			skill["inputModes"] = jsonStrings(s.InputModes)
		}
		if len(s.OutputModes) > 0 {
			skill["outputModes"] = jsonStrings(s.OutputModes)
		}
		skills = append(skills, skill)
	}
	metadata := api.JSONObject{
		"agent":              label,
		"a2aProtocolVersion": string(iface.ProtocolVersion),
		"sdk":                sdkModule,
		"sdkVersion":         sdkVersion,
		"streaming":          card.Capabilities.Streaming,
		"pushNotifications":  card.Capabilities.PushNotifications,
		"defaultInputModes":  jsonStrings(card.DefaultInputModes),
		"defaultOutputModes": jsonStrings(card.DefaultOutputModes),
		"skills":             skills,
	}
	if card.Description != "" {
		metadata["description"] = card.Description
	}
	if card.Provider != nil && card.Provider.Org != "" {
		metadata["agentProvider"] = card.Provider.Org
	}
	return api.ProviderManifest{
		ID:              id,
		Name:            name,
		Version:         version,
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologyRemote},
		Capabilities: map[string]api.SupportLevel{
			"action.approval":         api.SupportLevelUnsupported, // A2A has no approval; input-required is input
			"action.input":            api.SupportLevelNative,      // input-required
			"artifact.list":           api.SupportLevelNative,      // A2A artifacts, as descriptors
			"execution.cancel":        api.SupportLevelNative,      // CancelTask
			"conversation.continuity": api.SupportLevelNative,      // one contextId per conversation
			"event.replay":            api.SupportLevelEmulated,    // the edge's durable log
			"event.streaming":         streaming,
			"extension.mcp":           api.SupportLevelUnsupported,
			"extension.sandbox":       api.SupportLevelUnsupported,
			"extension.skills":        api.SupportLevelUnsupported, // listed as metadata only
			"extension.subagents":     api.SupportLevelUnsupported,
		},
		Metadata: &metadata,
	}
}

// jsonStrings is a JSON array of ss (the manifest's metadata holds JSON values, not Go slices).
func jsonStrings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
