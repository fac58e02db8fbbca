package check

import (
	"encoding/json"
	"time"
)

// snapshot is what the checker reads of an Execution answer.
type snapshot struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversationId"`
	ProviderID     string          `json:"providerId"`
	State          string          `json:"state"`
	Input          *string         `json:"input"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	WaitingFor     []string        `json:"waitingFor"`
	Usage          *usageFigures   `json:"usage"`
	Error          *executionError `json:"error"`
}

type executionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// usageFigures is an execution's cumulative usage, or a usage report's total.
type usageFigures struct {
	Executions  int64           `json:"executions"`
	TotalTokens int64           `json:"totalTokens"`
	Cost        *money          `json:"cost"`
	Costs       []money         `json:"costs"`
	Raw         json.RawMessage `json:"-"`
}

type money struct {
	Amount   json.RawMessage `json:"amount"`
	Currency string          `json:"currency"`
}

// startBody is what the checker reads of a start request.
type startBody struct {
	ConversationID string  `json:"conversationId"`
	Input          *string `json:"input"`
	IdempotencyKey string  `json:"idempotencyKey"`
	BusyPolicy     string  `json:"busyPolicy"`
	ProviderID     string  `json:"providerId"`
	Config         struct {
		// Usage: the mock reports usage only when its config names some (docs/usage.md).
		Usage json.RawMessage `json:"usage"`
	} `json:"config"`
}

// answerSnapshots reads an answer as one Execution or a page of them.
func answerSnapshots(answer json.RawMessage) []snapshot {
	if len(answer) == 0 {
		return nil
	}
	var page struct {
		Executions []snapshot `json:"executions"`
	}
	if json.Unmarshal(answer, &page) == nil && page.Executions != nil {
		var out []snapshot
		for _, s := range page.Executions {
			if s.ID != "" && s.State != "" {
				out = append(out, s)
			}
		}
		return out
	}
	var s snapshot
	if json.Unmarshal(answer, &s) == nil && s.ID != "" && s.State != "" && s.ConversationID != "" {
		return []snapshot{s}
	}
	return nil
}

// isTerminal reports a terminal execution state.
func isTerminal(state string) bool {
	return state == "succeeded" || state == "failed" || state == "cancelled"
}

// isTerminalEvent reports a terminal event type.
func isTerminalEvent(typ string) bool {
	return typ == "run.completed" || typ == "run.failed" || typ == "run.cancelled"
}

// terminalStateOf is the state a terminal event ends in.
func terminalStateOf(typ string) string {
	switch typ {
	case "run.completed":
		return "succeeded"
	case "run.failed":
		return "failed"
	case "run.cancelled":
		return "cancelled"
	}
	return ""
}
