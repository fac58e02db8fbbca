package acp

import "github.com/harness-edge/harness-edge/sdk/api"

// The Go ACP SDK this adapter speaks through; the manifest names it where the reference names its
// TypeScript SDK (config_test.go checks it against go.mod).
const (
	sdkModule  = "github.com/coder/acp-go-sdk"
	sdkVersion = "0.13.0"
)

// manifest is the ACP column of docs/protocol.md §10.4 with the instance's id. Capabilities
// are declared honestly: cancellation is emulated (session/cancel plus process teardown) and each
// execution gets a fresh native session, so continuity is unsupported.
func manifest(id string) api.ProviderManifest {
	metadata := api.JSONObject{
		"upstream":         "https://agentclientprotocol.com",
		"sdk":              sdkModule,
		"sdkVersion":       sdkVersion,
		"nativeSessions":   "per-execution",
		"clientFilesystem": false,
		"clientTerminal":   false,
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
			"conversation.continuity": api.SupportLevelUnsupported,
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
