package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"

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

// An event read back from disk is served byte for byte, never parsed (every replay, stream and
// webhook sends the bytes the runtime encoded once), so a byte damaged on disk anywhere in it
// would reach clients as invalid JSON, or as valid JSON that says something else. Stores keep
// a checksum beside each event, computed when it is written, and a read compares it before the
// event leaves the store: CRC-32C, which the CPU computes (SSE 4.2 on amd64, the CRC32
// instructions on arm64) at several GB/s. It detects every change confined to 32 consecutive
// bits (any damaged byte, wherever it is) and every change of up to 3 bits anywhere, and misses
// other damage with a probability of 2⁻³². Events this process wrote and serves from memory
// were never read from disk and need no check.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EventChecksum is the checksum a store keeps beside the event numbered seq, of type typ, with
// wire JSON raw: the CRC-32C of the sequence (8 bytes, big-endian), the type's length (1 byte),
// the type and the JSON. The sequence and the type are in it, so an event stored under another
// key, or whose type field was damaged into another known type, fails the check too. Types are
// shorter than 256 bytes (the stores refuse others).
func EventChecksum[T string | []byte](seq int64, typ T, raw []byte) uint32 {
	// The few bytes before the JSON go through the table one at a time: handing crc32.Update a
	// buffer for them would move it to the heap (an allocation per event read).
	sum := ^uint32(0)
	for shift := 56; shift >= 0; shift -= 8 {
		sum = castagnoli[byte(sum)^byte(seq>>shift)] ^ sum>>8
	}
	sum = castagnoli[byte(sum)^byte(len(typ))] ^ sum>>8
	for i := 0; i < len(typ); i++ {
		sum = castagnoli[byte(sum)^typ[i]] ^ sum>>8
	}
	return crc32.Update(^sum, castagnoli, raw)
}

// ChecksumOf is the EventChecksum a store writes beside e.
func ChecksumOf(e Event) uint32 { return EventChecksum(e.Sequence, string(e.Type), e.JSON) }

// EventOf rebuilds an Event from what a store keeps: the sequence (a key), the type (a field of
// its own, written from Event.Type), the wire JSON and the checksum written with them
// (EventChecksum). Nothing is parsed: the type must be a known one and the checksum must match,
// else the value is ErrUndecodable. raw is kept, not copied; typ is only compared.
func EventOf(seq int64, typ, raw []byte, sum uint32) (Event, error) {
	t, ok := eventTypeOf(typ)
	switch {
	case !ok:
		return Event{}, fmt.Errorf("%w: stored event %d has an unknown type %q", ErrUndecodable, seq, typ)
	case seq < 1:
		return Event{}, fmt.Errorf("%w: stored event has sequence %d", ErrUndecodable, seq)
	case EventChecksum(seq, typ, raw) != sum:
		return Event{}, fmt.Errorf("%w: stored event %d does not match its checksum (damaged after it was written)", ErrUndecodable, seq)
	}
	return Event{Sequence: seq, Type: t, JSON: raw}, nil
}

// LegacyEvent checks, once, an event a store wrote before it kept checksums (bbolt formats 1
// and 2, PostgreSQL schema 3), so that its migration can give it one: raw must be valid UTF-8
// and one valid JSON object whose sequence is seq and whose type is a known one, and typ,
// where the store kept the type beside the JSON (hasType), must be that type. It reads the
// whole value (a few µs for a small event), which the migration pays once and reads never do;
// what fails is ErrUndecodable, and the migration keeps it so (an empty type). raw is kept,
// not copied.
func LegacyEvent(seq int64, typ []byte, hasType bool, raw []byte) (Event, error) {
	e, err := EventFromJSON(raw) // json.Unmarshal checks the syntax of all of raw first
	switch {
	case err != nil:
	case !utf8.Valid(raw):
		err = errors.New("stored event is not valid UTF-8")
	case e.Sequence != seq:
		err = fmt.Errorf("stored event has sequence %d under key %d", e.Sequence, seq)
	case hasType && string(typ) != string(e.Type):
		err = fmt.Errorf("stored event has type %q beside its JSON, %q in it", typ, e.Type)
	}
	if err != nil {
		return Event{}, fmt.Errorf("%w: event %d: %w", ErrUndecodable, seq, err)
	}
	return e, nil
}
