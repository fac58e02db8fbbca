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

// eventTypeIndex is typ's index in knownEventTypes.
func eventTypeIndex[T string | []byte](typ T) (int, bool) {
	for i, t := range knownEventTypes {
		if string(typ) == string(t) { // no allocation: the conversion is only compared
			return i, true
		}
	}
	return 0, false
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

// typeChecksums are the CRC-32C of each of knownEventTypes: a checksum of a known type's event
// continues from there, so a read runs the CRC over the JSON only, in one call the processor
// does.
var typeChecksums = func() []uint32 {
	sums := make([]uint32, len(knownEventTypes))
	for i, t := range knownEventTypes {
		sums[i] = crc32.Checksum([]byte(t), castagnoli)
	}
	return sums
}()

// EventChecksum is the checksum a store keeps beside the event numbered seq, of type typ, with
// wire JSON raw: the CRC-32C of the type followed by the JSON (the JSON starts with '{', which
// no type holds, so the two cannot be confused), XOR the sequence's low 32 bits. The type and
// the sequence are in it, so an event whose type was damaged into another known one, or that is
// stored under another key, fails the check too.
func EventChecksum[T string | []byte](seq int64, typ T, raw []byte) uint32 {
	if i, ok := eventTypeIndex(typ); ok {
		return continueChecksum(typeChecksums[i], seq, raw)
	}
	// Only a migration writes an unknown type (empty: an event it found damaged).
	return continueChecksum(crc32.Checksum([]byte(typ), castagnoli), seq, raw)
}

// continueChecksum is EventChecksum from the CRC-32C of the type.
func continueChecksum(typeSum uint32, seq int64, raw []byte) uint32 {
	return crc32.Update(typeSum, castagnoli, raw) ^ uint32(seq)
}

// ChecksumOf is the EventChecksum a store writes beside e.
func ChecksumOf(e Event) uint32 { return EventChecksum(e.Sequence, string(e.Type), e.JSON) }

// EventOf rebuilds an Event from what a store keeps: the sequence (a key), the type (a field of
// its own, written from Event.Type), the wire JSON and the checksum written with them
// (EventChecksum). Nothing is parsed: the type must be a known one and the checksum must match,
// else the value is ErrUndecodable. raw is kept, not copied; typ is only compared.
func EventOf(seq int64, typ, raw []byte, sum uint32) (Event, error) {
	i, ok := eventTypeIndex(typ)
	switch {
	case !ok:
		return Event{}, fmt.Errorf("%w: stored event %d has an unknown type %q", ErrUndecodable, seq, typ)
	case seq < 1:
		return Event{}, fmt.Errorf("%w: stored event has sequence %d", ErrUndecodable, seq)
	case continueChecksum(typeChecksums[i], seq, raw) != sum:
		return Event{}, fmt.Errorf("%w: stored event %d does not match its checksum (damaged after it was written)", ErrUndecodable, seq)
	}
	return Event{Sequence: seq, Type: knownEventTypes[i], JSON: raw}, nil
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
