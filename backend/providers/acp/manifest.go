package acp

import "github.com/harness-edge/harness-edge/sdk/api"

// The Go ACP SDK this adapter speaks through; the manifest names it where the reference names its
// TypeScript SDK (config_test.go checks it against go.mod).
const (
	sdkModule  = "github.com/coder/acp-go-sdk"
	sdkVersion = "0.13.0"
)

// manifest is the ACP column of docs/protocol.md §10.4 with the instance's id. Capabilities
// are declared honestly: cancellation is emulated (session/cancel plus process teardown), and
// conversation continuity is what the agent answered to initialize (learned; nil before it
// answered), see continuityLevel.
func manifest(id string, learned *agentCapabilities) api.ProviderManifest {
	level, how := continuityLevel(learned)
	metadata := api.JSONObject{
		"upstream":          "https://agentclientprotocol.com",
		"sdk":               sdkModule,
		"sdkVersion":        sdkVersion,
		"nativeSessions":    "per-conversation",
		"sessionContinuity": how,
		"clientFilesystem":  false,
		"clientTerminal":    false,
	}
	return api.ProviderManifest{
		ID:              id,
		Name:            "ACP v1 Agent Adapter",
		Version:         "0.2.0",
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologySubprocess},
		Capabilities: map[string]api.SupportLevel{
			"action.approval":         api.SupportLevelNative,
			"action.input":            api.SupportLevelUnsupported,
			"artifact.list":           api.SupportLevelUnsupported,
			"execution.cancel":        api.SupportLevelEmulated,
			"conversation.continuity": level,
			"event.replay":            api.SupportLevelEmulated,
			"event.streaming":         api.SupportLevelNative,
			"extension.mcp":           api.SupportLevelUnsupported,
			"extension.sandbox":       api.SupportLevelUnsupported,
			"extension.skills":        api.SupportLevelUnsupported,
			"extension.subagents":     api.SupportLevelUnsupported,
		},
		Metadata: &metadata,
	}
}

// continuityLevel is conversation.continuity from the agent's initialize answer, with how the
// provider continues a conversation (metadata.sessionContinuity):
//   - native when a new process can continue the stored session (session/resume or
//     session/load): after an eviction, a restart of the edge, or on another node;
//   - degraded when it cannot: the conversation is remembered only while its process stays
//     warm (pool.go), and starts afresh after that — continuity with a weaker guarantee, which
//     the protocol's preflight lets pass (docs/protocol.md §10.1);
//   - unsupported while the agent has not answered (the probe is retried in the background):
//     nothing is promised that may not hold.
func continuityLevel(learned *agentCapabilities) (api.SupportLevel, string) {
	switch {
	case learned == nil:
		return api.SupportLevelUnsupported, "unknown: the agent has not answered initialize yet"
	case learned.resume && learned.load:
		return api.SupportLevelNative, "session/resume, session/load"
	case learned.resume:
		return api.SupportLevelNative, "session/resume"
	case learned.load:
		return api.SupportLevelNative, "session/load"
	default:
		return api.SupportLevelDegraded, "warm process only"
	}
}
