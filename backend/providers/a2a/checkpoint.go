package a2a

import (
	"encoding/json"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// checkpoint is the relay's durable position in its A2A task, committed with every event it
// relays (backend.Run.WithCheckpoint). A2A has no event sequence to resume after, so the
// position is counted in what a task keeps: its history and its artifacts, both in the order
// the agent produced them.
type checkpoint struct {
	// Sending is set before the first message goes out, while the task id is not known yet.
	Sending   bool       `json:"sending,omitempty"`
	TaskID    a2a.TaskID `json:"taskId,omitempty"`
	ContextID string     `json:"contextId,omitempty"`
	// Messages is how many of the task's agent messages (history, role agent) have been relayed
	// in full, and Parts how many parts of the next one.
	Messages int `json:"messages"`
	Parts    int `json:"parts,omitempty"`
	// Silent lists the agent messages counted but not relayed as text: the questions of
	// input-required (they are the actions' descriptions), kept out of the final output.
	Silent []string `json:"silent,omitempty"`
	// Artifacts is how many of the task's artifacts have been announced (artifact.created).
	Artifacts int `json:"artifacts"`
	// Round counts the answers to input-required taken from callers; the answer of round n is
	// sent as the message answerMessageID(execution, n), so a resend is recognisable in history.
	Round int `json:"round,omitempty"`
	// Answer is the last answer taken, recorded before it is sent (a restart in between sends
	// it then); AnsweredQuestion names the input-required status it answers.
	Answer           *api.ActionResponse `json:"answer,omitempty"`
	AnsweredQuestion string              `json:"answeredQuestion,omitempty"`
}

func (cp checkpoint) encode() []byte {
	raw, err := json.Marshal(cp)
	if err != nil {
		panic("a2a: encode checkpoint: " + err.Error()) // strings, numbers and a JSON answer
	}
	return raw
}

// firstMessageID and answerMessageID name the messages the edge sends for an execution: the same
// execution always sends the same ids.
func firstMessageID(executionID string) string { return "harness-edge-" + executionID }

func answerMessageID(executionID string, round int) string {
	return "harness-edge-" + executionID + "-answer-" + strconv.Itoa(round)
}

// questionKey identifies an input-required status: its message id, else its timestamp.
func questionKey(s a2a.TaskStatus) string {
	if s.Message != nil && s.Message.ID != "" {
		return "message:" + s.Message.ID
	}
	if s.Timestamp != nil {
		return "time:" + s.Timestamp.UTC().Format("2006-01-02T15:04:05.999999999Z")
	}
	return "input-required"
}
