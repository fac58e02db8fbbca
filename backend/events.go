package backend

import (
	"bytes"
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
// marshalled exactly once. Field order matches encoding/json's for api.RuntimeEvent. One
// allocation: the ids, the time and the type need no escaping (appendPlainString checks, and
// falls back to the general encoder when they would).
func encodeEvent(executionID string, seq int64, typ api.StandardEventType, at api.Timestamp, data []byte) []byte {
	buf := make([]byte, 0, len(data)+2*len(executionID)+len(at)+len(typ)+88)
	buf = append(buf, `{"data":`...)
	buf = append(buf, data...)
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
		buf = appendCanonicalString(buf, executionID+":"+strconv.FormatInt(seq, 10))
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

// appendPlainString quotes s, verbatim when it is plain, else as appendCanonicalString does.
func appendPlainString(buf []byte, s string) []byte {
	if !plainString(s) {
		return appendCanonicalString(buf, s)
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// textData encodes {"text": text} exactly as json.Marshal(map[string]string{"text": text})
// does, without the map and the reflection when the text is plain (the usual case).
func textData(text string) []byte {
	if !plainString(text) {
		return mustData(map[string]string{"text": text})
	}
	buf := make([]byte, 0, len(text)+11)
	buf = append(buf, `{"text":"`...)
	buf = append(buf, text...)
	return append(buf, `"}`...)
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

var typeTail = []byte(`,"type":"`)

// knownEventTypes are the event types, for looking a stored type up without allocating.
var knownEventTypes = []api.StandardEventType{
	api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted, api.StandardEventTypeOutputTextDelta,
	api.StandardEventTypeOutputTextDone, api.StandardEventTypeActionRequired, api.StandardEventTypeActionResponded,
	api.StandardEventTypeArtifactCreated, api.StandardEventTypeProviderEvent, api.StandardEventTypeRunCompleted,
	api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled,
}

func eventTypeOf(b []byte) (api.StandardEventType, bool) {
	for _, t := range knownEventTypes {
		if string(b) == string(t) { // no allocation: the conversion is only compared
			return t, true
		}
	}
	return "", false
}

// eventFromStored rebuilds an Event from its store key's sequence and its wire JSON without
// decoding the JSON: encodeEvent writes the type last, so it is the tail `,"type":"…"}`. Any
// other shape (not written by this version) takes the decoding path.
func eventFromStored(seq int64, raw []byte) (Event, error) {
	tail := raw[max(0, len(raw)-64):] // the type is short: look at the end only
	if i := bytes.LastIndex(tail, typeTail); i >= 0 && bytes.HasSuffix(tail, []byte(`"}`)) {
		if typ, ok := eventTypeOf(tail[i+len(typeTail) : len(tail)-2]); ok && seq >= 1 {
			return Event{Sequence: seq, Type: typ, JSON: raw}, nil
		}
	}
	e, err := eventFromJSON(raw)
	if err == nil && e.Sequence != seq {
		err = fmt.Errorf("stored event has sequence %d under key %d", e.Sequence, seq)
	}
	return e, err
}

// mustData encodes runtime-built event data, which is always encodable.
func mustData(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("backend: encode runtime event data: %v", err))
	}
	return raw
}
