package webhook

import (
	"bytes"
	"encoding/json"

	"github.com/harness-edge/harness-edge/backend/store"
)

// BudgetExceeded is the notification type sent when an execution takes its tenant to the limit
// of a usage budget (docs/usage.md). It is not an event type of the protocol: the runtime
// records the crossing as a provider.event in its own namespace, {"provider": "harness",
// "type": "budget.exceeded", "budget": "…", "action": "cancel"|"finish"}, and a subscription
// that lists budget.exceeded gets that event under this type (with the execution, as every
// notification). A subscription that lists provider.event and not budget.exceeded gets it as a
// provider.event like any other.
const BudgetExceeded = "budget.exceeded"

// isBudgetExceeded reports whether a provider.event is the runtime's budget crossing.
func isBudgetExceeded(e store.Event) bool {
	if !bytes.Contains(e.JSON, []byte(`"budget.exceeded"`)) { // the cheap test first
		return false
	}
	var head struct {
		Data struct {
			Provider string `json:"provider"`
			Type     string `json:"type"`
		} `json:"data"`
	}
	return json.Unmarshal(e.JSON, &head) == nil && head.Data.Provider == "harness" && head.Data.Type == BudgetExceeded
}
