package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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
func (e Event) Terminal() bool { return IsTerminalEventType(e.Type) }

// Decode parses the wire JSON.
func (e Event) Decode() (api.RuntimeEvent, error) {
	var re api.RuntimeEvent
	if err := json.Unmarshal(e.JSON, &re); err != nil {
		return api.RuntimeEvent{}, fmt.Errorf("decode event %d: %w", e.Sequence, err)
	}
	return re, nil
}

// IsTerminalEventType reports whether t ends an execution.
func IsTerminalEventType(t api.StandardEventType) bool { return t.Terminal() }

// EventFromJSON rebuilds an Event's index fields from stored wire JSON by decoding it.
func EventFromJSON(raw []byte) (Event, error) {
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

var typeTail = []byte(`,"type":"`)

// knownEventTypes are the event types, for looking a stored type up without allocating.
var knownEventTypes = api.StandardEventTypes

func eventTypeOf(b []byte) (api.StandardEventType, bool) {
	for _, t := range knownEventTypes {
		if string(b) == string(t) { // no allocation: the conversion is only compared
			return t, true
		}
	}
	return "", false
}

// EventFromStored rebuilds an Event from the sequence a store keeps beside it (its key) and
// its wire JSON, without decoding the JSON: the runtime's encoder writes the type last, so it
// is the tail `,"type":"…"}`. Any other shape (not written by this version) takes the decoding
// path, which also checks the JSON's sequence against seq. Stores call it on every read, so it
// must stay cheap: raw is kept, not copied.
func EventFromStored(seq int64, raw []byte) (Event, error) {
	tail := raw[max(0, len(raw)-64):] // the type is short: look at the end only
	if i := bytes.LastIndex(tail, typeTail); i >= 0 && bytes.HasSuffix(tail, []byte(`"}`)) {
		if typ, ok := eventTypeOf(tail[i+len(typeTail) : len(tail)-2]); ok && seq >= 1 {
			return Event{Sequence: seq, Type: typ, JSON: raw}, nil
		}
	}
	e, err := EventFromJSON(raw)
	if err == nil && e.Sequence != seq {
		err = fmt.Errorf("stored event has sequence %d under key %d", e.Sequence, seq)
	}
	return e, err
}
