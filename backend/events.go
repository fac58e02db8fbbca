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

// newEvent is an event about to be appended: its data already encoded (and validated).
type newEvent struct {
	typ  api.StandardEventType
	data []byte // compact JSON object
}

// encodeEvent writes the RuntimeEvent wire form around already-encoded data, so provider data is
// marshalled exactly once. The bytes are json.Marshal's for api.RuntimeEvent (field order and
// escaping; FuzzEncodeEvent holds them equal). One allocation: the ids, the time and the type
// need no escaping (appendPlainString checks, and falls back to encoding/json when they would).
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

// providerData encodes {"providerId": id}, the data of run.queued and run.started, exactly as
// json.Marshal(map[string]string{"providerId": id}) does, without the map and the reflection
// when the id is plain (the usual case): two of every execution's events.
func providerData(id string) []byte {
	if !plainString(id) {
		return mustData(map[string]string{"providerId": id})
	}
	buf := make([]byte, 0, len(id)+17)
	buf = append(buf, `{"providerId":"`...)
	buf = append(buf, id...)
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
