package backend

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// eventFor builds an event from text the way the runtime builds that type's event (start.go,
// run.go, cancel.go, actions.go, emit.go): its data passes through json.Marshal, or it is one
// string field that newEvent.encode writes in place.
func eventFor(typ api.StandardEventType, text string) newEvent {
	switch typ {
	case api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted:
		return stringEvent(typ, "providerId", text)
	case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDone:
		return textEvent(typ, text)
	case api.StandardEventTypeRunCompleted:
		return stringEvent(typ, "finalOutput", text)
	}
	return newEvent{typ: typ, data: eventDataFor(typ, text)}
}

// eventDataFor is the data of eventFor(typ, text), as its own JSON.
func eventDataFor(typ api.StandardEventType, text string) []byte {
	switch typ {
	case api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted:
		return stringFieldData("providerId", text)
	case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDone:
		return stringFieldData("text", text)
	case api.StandardEventTypeRunCompleted:
		return mustData(map[string]string{"finalOutput": text})
	case api.StandardEventTypeRunFailed:
		return mustData(map[string]string{"code": string(CodeProviderError), "message": text})
	case api.StandardEventTypeRunCancelled:
		return mustData(map[string]string{"reason": text})
	case api.StandardEventTypeActionResponded:
		return mustData(map[string]any{"actionId": text, "approved": true})
	default: // action.required, artifact.created, provider.event: objects the runtime marshals
		return mustData(map[string]any{"id": text, "params": map[string]any{"text": text, "n": len(text)}})
	}
}

// FuzzEncodeEvent holds encodeEvent and newEvent.encode, the runtime's hand-written event
// encoders, byte for byte equal to json.Marshal of the generated wire type api.RuntimeEvent,
// for every event type and any execution id, sequence, time and data text (seeds: each real
// event type as the runtime writes it, and strings that need escaping).
func FuzzEncodeEvent(f *testing.F) {
	const at = "2026-11-29T19:50:06.123Z"
	for i, typ := range api.StandardEventTypes {
		f.Add(newExecutionID(), int64(i+1), uint8(i), at, "hello "+string(typ))
	}
	f.Add("exe_<&>", int64(-1), uint8(0), "2026-11-29T19:50:06.123Z\u2028", "<b>\"quoted\"\n")
	f.Add("exe_\xff\u2029", int64(1<<62), uint8(8), "\t", "\x00\ufffd")
	f.Fuzz(func(t *testing.T, id string, seq int64, typeIndex uint8, at, text string) {
		typ := api.StandardEventTypes[int(typeIndex)%len(api.StandardEventTypes)]
		data := eventDataFor(typ, text)
		var wireData api.EventData
		if err := wireData.UnmarshalJSON(data); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		want, err := json.Marshal(api.RuntimeEvent{
			Data:        wireData,
			ExecutionID: id,
			ID:          id + ":" + strconv.FormatInt(seq, 10),
			Sequence:    seq,
			Time:        at,
			Type:        typ,
		})
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		if got := encodeEvent(id, seq, typ, at, data); !bytes.Equal(got, want) {
			t.Fatalf("encodeEvent differs from json.Marshal(api.RuntimeEvent)\n got: %s\nwant: %s", got, want)
		}
		if got := eventFor(typ, text).encode(id, seq, at); !bytes.Equal(got, want) {
			t.Fatalf("newEvent.encode differs from json.Marshal(api.RuntimeEvent)\n got: %s\nwant: %s", got, want)
		}
	})
}
