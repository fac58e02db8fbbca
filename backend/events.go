package backend

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Event is an event as stored: the exact wire JSON of the RuntimeEvent, encoded once at append
// time and shared by every reader (store, replay, every live subscriber). It is defined by the
// store contract; the alias keeps it part of this package's API (proxy and providers use it).
type Event = store.Event

// newEvent is an event about to be appended: its data already encoded (and validated), or, for
// events whose data is one string field (stringEvent), that field.
type newEvent struct {
	typ  api.StandardEventType
	data []byte // compact JSON object
	// field, when set, makes the event's data {field: value} instead, written straight into
	// the event's bytes (encode) without an encoding of its own first.
	field, value string
}

// stringEvent is an event whose data is the object {field: value}, as json.Marshal writes
// map[string]string{field: value}: the text events ("text"), run.completed ("finalOutput").
func stringEvent(typ api.StandardEventType, field, value string) newEvent {
	return newEvent{typ: typ, field: field, value: value}
}

// textEvent is an event whose data is {"text": text}: output.text.delta, output.text.done.
func textEvent(typ api.StandardEventType, text string) newEvent {
	return stringEvent(typ, "text", text)
}

// dataLen is the length of the event's data as encoded.
func (ne newEvent) dataLen() int {
	switch {
	case ne.field == "":
		return len(ne.data)
	case plainString(ne.field) && plainString(ne.value):
		return len(ne.field) + len(ne.value) + 7
	default:
		return len(stringFieldData(ne.field, ne.value))
	}
}

// encode is the event's wire JSON as the executionID's event numbered seq, stamped at.
func (ne newEvent) encode(executionID string, seq int64, at api.Timestamp) []byte {
	if ne.field == "" {
		return encodeEvent(executionID, seq, ne.typ, at, ne.data)
	}
	if !plainString(ne.field) || !plainString(ne.value) {
		return encodeEvent(executionID, seq, ne.typ, at, stringFieldData(ne.field, ne.value))
	}
	// stringFieldData's bytes, written in place: one allocation per event instead of two.
	buf := make([]byte, 0, eventLen(executionID, at, ne.typ, len(ne.field)+len(ne.value)+7))
	buf = append(buf, `{"data":`...)
	buf = appendStringField(buf, ne.field, ne.value)
	return appendEventFields(buf, executionID, seq, ne.typ, at)
}

// encodeEvent writes the RuntimeEvent wire form around already-encoded data, so provider data is
// marshalled exactly once. The bytes are json.Marshal's for api.RuntimeEvent (field order and
// escaping; FuzzEncodeEvent holds them equal). One allocation: the ids, the time and the type
// need no escaping (appendPlainString checks, and falls back to encoding/json when they would).
func encodeEvent(executionID string, seq int64, typ api.StandardEventType, at api.Timestamp, data []byte) []byte {
	buf := make([]byte, 0, eventLen(executionID, at, typ, len(data)))
	buf = append(buf, `{"data":`...)
	buf = append(buf, data...)
	return appendEventFields(buf, executionID, seq, typ, at)
}

// eventLen is room enough for an event with dataLen bytes of data and plain strings.
func eventLen(executionID string, at api.Timestamp, typ api.StandardEventType, dataLen int) int {
	return dataLen + 2*len(executionID) + len(at) + len(typ) + 88
}

// appendEventFields appends what follows the data in an event's JSON: the ids, the sequence,
// the time and the type, and the closing brace.
func appendEventFields(buf []byte, executionID string, seq int64, typ api.StandardEventType, at api.Timestamp) []byte {
	buf = append(buf, `,"executionId":`...)
	buf = appendPlainString(buf, executionID)
	buf = append(buf, `,"id":`...)
	if plainString(executionID) {
		buf = append(buf, '"')
		buf = append(buf, executionID...)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, seq, 10)
		buf = append(buf, '"')
	} else {
		buf = appendJSONString(buf, executionID+":"+strconv.FormatInt(seq, 10))
	}
	buf = append(buf, `,"sequence":`...)
	buf = strconv.AppendInt(buf, seq, 10)
	buf = append(buf, `,"time":`...)
	buf = appendPlainString(buf, at)
	buf = append(buf, `,"type":`...)
	buf = appendPlainString(buf, string(typ))
	return append(buf, '}')
}

// plainString reports whether s is printable ASCII that every JSON encoder writes verbatim
// (no quote, backslash, control character, nor the <, >, & that encoding/json escapes).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendPlainString quotes s, verbatim when it is plain, else as encoding/json does.
func appendPlainString(buf []byte, s string) []byte {
	if !plainString(s) {
		return appendJSONString(buf, s)
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// appendJSONString quotes s exactly as json.Marshal does (it escapes <, >, &, U+2028 and
// U+2029, and writes invalid UTF-8 as \ufffd, where the canonical form of canonicaljson.go
// does not): the event's bytes stay json.Marshal's for any string.
func appendJSONString(buf []byte, s string) []byte {
	quoted, _ := json.Marshal(s) // a string always encodes
	return append(buf, quoted...)
}

// stringFieldData encodes {field: value} exactly as json.Marshal(map[string]string{field:
// value}) does, without the map and the reflection when both are plain (the usual case).
func stringFieldData(field, value string) []byte {
	if !plainString(field) || !plainString(value) {
		return mustData(map[string]string{field: value})
	}
	return appendStringField(make([]byte, 0, len(field)+len(value)+7), field, value)
}

// appendStringField appends {"field":"value"}; both must be plain.
func appendStringField(buf []byte, field, value string) []byte {
	buf = append(buf, `{"`...)
	buf = append(buf, field...)
	buf = append(buf, `":"`...)
	buf = append(buf, value...)
	return append(buf, `"}`...)
}

// mustData encodes runtime-built event data, which is always encodable.
func mustData(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("backend: encode runtime event data: %v", err))
	}
	return raw
}
