package backend

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// eventDataFor builds an event's data from text the way the runtime builds that type's data
// (start.go, run.go, cancel.go, actions.go, emit.go): every one passes through json.Marshal or
// an encoder held equal to it.
func eventDataFor(typ api.StandardEventType, text string) []byte {
	switch typ {
	case api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted:
		return providerData(text)
	case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDone:
		return textData(text)
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

// FuzzEncodeEvent holds encodeEvent, the runtime's hand-written event encoder, byte for byte
// equal to json.Marshal of the generated wire type api.RuntimeEvent, for every event type and
// any execution id, sequence, time and data text (seeds: each real event type as the runtime
// writes it, and strings that need escaping).
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
	})
}
