package remote

import (
	"encoding/json"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/usage"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Usage (docs/usage.md, "remote"): the upstream edge reports its execution's usage the way this
// one does, as a provider.event {"provider": "harness", "type": "usage", "usage": {…}} holding
// the cumulative usage. The relay turns it into this execution's report (Run.ReportUsage),
// which stores it and emits this edge's own usage event, instead of relaying it as it is (the
// stream would show it twice). A report relayed again after a restart is the same cumulative
// value, which the runtime takes as no change. The upstream's other events of that namespace
// (its budget.exceeded) are relayed with provider "upstream": they are about the upstream's
// budgets, not this edge's, and this edge's webhooks must not take them for its own.

// upstreamNamespace replaces the runtime's namespace in relayed events.
const upstreamNamespace = "upstream"

// relayHarnessEvent handles a provider.event of the upstream runtime's own namespace: handled
// is false for any other provider.event.
func (r *relayRun) relayHarnessEvent(data api.JSONObject, checkpoint []byte) (handled bool, err error) {
	if data["provider"] != backend.UsageNamespace {
		return false, nil
	}
	if data["type"] != "usage" {
		data["provider"] = upstreamNamespace
		return true, r.run.WithCheckpoint(checkpoint).Emit(api.StandardEventTypeProviderEvent, data)
	}
	raw, err := json.Marshal(data["usage"])
	if err != nil {
		return true, nil
	}
	var wire api.Usage
	u, err := usage.Usage{}, json.Unmarshal(raw, &wire)
	if err == nil {
		u, err = usage.FromAPI(wire)
	}
	if err != nil {
		u = usage.Usage{InputTokens: -1} // refused by the runtime, logged once per execution
	}
	return true, r.run.ReportUsage(u)
}
