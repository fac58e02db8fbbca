package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Event is an event as stored: the exact wire JSON of the RuntimeEvent, encoded once at append
// time and shared by every reader (store, replay, every live subscriber).
type Event struct {
	Sequence int64
	Type     api.StandardEventType
	JSON     []byte // compact RuntimeEvent JSON; never modify
}

// Terminal reports whether e is run.completed, run.failed or run.cancelled.
func (e Event) Terminal() bool { return isTerminalEventType(e.Type) }

// Decode parses the wire JSON.
func (e Event) Decode() (api.RuntimeEvent, error) {
	var re api.RuntimeEvent
	if err := json.Unmarshal(e.JSON, &re); err != nil {
		return api.RuntimeEvent{}, fmt.Errorf("decode event %d: %w", e.Sequence, err)
	}
	return re, nil
}

func isTerminalEventType(t api.StandardEventType) bool {
	switch t {
	case api.StandardEventTypeRunCompleted, api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled:
		return true
	}
	return false
}

// newEvent is an event about to be appended: its data already encoded (and validated).
type newEvent struct {
	typ  api.StandardEventType
	data []byte // compact JSON object
}

// encodeEvent writes the RuntimeEvent wire form around already-encoded data, so provider data is
// marshalled exactly once. Field order matches encoding/json's for api.RuntimeEvent.
func encodeEvent(executionID string, seq int64, typ api.StandardEventType, at api.Timestamp, data []byte) []byte {
	buf := make([]byte, 0, len(data)+2*len(executionID)+len(typ)+96)
	buf = append(buf, `{"data":`...)
	buf = append(buf, data...)
	buf = append(buf, `,"executionId":`...)
	buf = appendCanonicalString(buf, executionID)
	buf = append(buf, `,"id":`...)
	buf = appendCanonicalString(buf, executionID+":"+strconv.FormatInt(seq, 10))
	buf = append(buf, `,"sequence":`...)
	buf = strconv.AppendInt(buf, seq, 10)
	buf = append(buf, `,"time":`...)
	buf = appendCanonicalString(buf, at)
	buf = append(buf, `,"type":`...)
	buf = appendCanonicalString(buf, string(typ))
	return append(buf, '}')
}

// eventFromJSON rebuilds the Event index fields from stored wire JSON.
func eventFromJSON(raw []byte) (Event, error) {
	var head struct {
		Sequence int64                 `json:"sequence"`
		Type     api.StandardEventType `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Event{}, err
	}
	if head.Sequence < 1 || !head.Type.Valid() {
		return Event{}, errors.New("stored event lacks a sequence or a known type")
	}
	return Event{Sequence: head.Sequence, Type: head.Type, JSON: raw}, nil
}

// mustData encodes runtime-built event data, which is always encodable.
func mustData(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("backend: encode runtime event data: %v", err))
	}
	return raw
}
