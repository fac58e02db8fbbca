package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Event is an event as stored: the exact wire JSON of the RuntimeEvent, encoded once at append
// time and shared by every reader (store, replay, every live subscriber). Stores keep Type
// beside the JSON, as a field of their own, and the sequence in the key (EventOf).
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

var (
	dataHead     = []byte(`{"data":{`)
	sequenceMark = []byte(`,"sequence":`)
	timeMark     = []byte(`,"time":"`)
	typeTail     = []byte(`,"type":"`)
)

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

// EventOf rebuilds an Event from the fields a store keeps beside its wire JSON: the sequence
// (a key) and the type (a field of its own, written from Event.Type). Nothing is parsed: the
// type must be a known one and raw must look like a JSON object at both ends (a value whose
// ends were damaged would otherwise be served as invalid JSON); what fails is ErrUndecodable.
// raw is kept, not copied; typ is only compared.
func EventOf(seq int64, typ, raw []byte) (Event, error) {
	t, ok := eventTypeOf(typ)
	switch {
	case !ok:
		return Event{}, fmt.Errorf("%w: stored event %d has an unknown type %q", ErrUndecodable, seq, typ)
	case seq < 1:
		return Event{}, fmt.Errorf("%w: stored event has sequence %d", ErrUndecodable, seq)
	case len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}':
		return Event{}, fmt.Errorf("%w: stored event %d is not a JSON object", ErrUndecodable, seq)
	}
	return Event{Sequence: seq, Type: t, JSON: raw}, nil
}

// EventFromStored rebuilds an Event from the sequence a store keeps beside it (its key) and
// its wire JSON alone, as stores wrote events before they kept the type beside it (bbolt
// format 1, PostgreSQL schema 2): migrations use it, readers of the current formats use
// EventOf. The runtime's encoder writes `{"data":{…},…,"sequence":N,"time":"…",
// "type":"…"}`, so the type and the sequence are in the last hundred bytes: checking that head
// and that tail (the sequence against seq, the type against the known ones) costs a few dozen
// byte comparisons, whatever the event's size, and catches a value whose ends were damaged,
// which would otherwise be served as invalid JSON. Any other shape takes the decoding path,
// which validates the whole value and checks its sequence against seq; what fails there is
// ErrUndecodable. Stores call it on every read, so it must stay cheap: raw is kept, not copied.
func EventFromStored(seq int64, raw []byte) (Event, error) {
	if typ, ok := writtenByEncoder(seq, raw); ok {
		return Event{Sequence: seq, Type: typ, JSON: raw}, nil
	}
	e, err := EventFromJSON(raw)
	if err == nil && e.Sequence != seq {
		err = fmt.Errorf("stored event has sequence %d under key %d", e.Sequence, seq)
	}
	if err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return e, nil
}

// writtenByEncoder reports whether raw has the head and the tail the runtime's encoder writes
// for an event numbered seq, and its type. It reads the first 9 bytes and, backwards from the
// end, the type, the time and the sequence: some eighty bytes, whatever the event's size.
func writtenByEncoder(seq int64, raw []byte) (api.StandardEventType, bool) {
	if seq < 1 || !bytes.HasPrefix(raw, dataHead) || !bytes.HasSuffix(raw, []byte(`"}`)) {
		return "", false
	}
	rest := raw[len(dataHead) : len(raw)-2] // …,"sequence":N,"time":"T","type":"X
	q := bytes.LastIndexByte(rest, '"')
	if q < 0 {
		return "", false
	}
	typ, ok := eventTypeOf(rest[q+1:])
	if !ok || !bytes.HasSuffix(rest[:q+1], typeTail) {
		return "", false
	}
	rest = rest[:q+1-len(typeTail)] // …,"sequence":N,"time":"T"
	if !bytes.HasSuffix(rest, []byte(`"`)) {
		return "", false
	}
	q = bytes.LastIndexByte(rest[:len(rest)-1], '"')
	if q < 0 || !bytes.HasSuffix(rest[:q+1], timeMark) {
		return "", false
	}
	rest = rest[:q+1-len(timeMark)] // …,"sequence":N
	var n, unit int64 = 0, 1
	i := len(rest)
	for ; i > 0 && len(rest)-i < 19 && rest[i-1] >= '0' && rest[i-1] <= '9'; i-- {
		n += int64(rest[i-1]-'0') * unit
		unit *= 10
	}
	if i == len(rest) || n != seq || rest[i] == '0' || !bytes.HasSuffix(rest[:i], sequenceMark) {
		return "", false
	}
	return typ, true
}
