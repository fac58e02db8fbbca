package backend

import (
	"bytes"
	"encoding/json"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// emit validates a provider emission (docs/protocol.md §4.4) and appends it.
func (r *Runtime) emit(x *execution, checkpoint []byte, eventType api.StandardEventType, data api.JSONObject) error {
	switch eventType {
	case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeProviderEvent:
	case api.StandardEventTypeArtifactCreated:
		in, err := artifactInputFromData(data)
		if err != nil {
			return err
		}
		return r.emitArtifact(x, checkpoint, in)
	default:
		return providerError(msgReservedEventType)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return providerError(msgInvalidEventData)
	}
	if bytes.Equal(raw, []byte("null")) { // a nil map is the empty object
		raw = []byte("{}")
	}
	if eventType == api.StandardEventTypeOutputTextDelta {
		if _, ok := data["text"].(string); !ok {
			return providerError(msgInvalidTextDelta)
		}
	}
	return r.appendProviderEvent(x, checkpoint, eventType, raw)
}

// appendProviderEvent appends already-validated provider data, with the provider's checkpoint
// when it gave one (nil: none). Emissions while cancelling are appended; once terminal they are
// ignored (docs/protocol.md §4.4, §8).
func (r *Runtime) appendProviderEvent(x *execution, checkpoint []byte, eventType api.StandardEventType, data []byte) error {
	if len(data) > r.opts.MaxEventDataBytes {
		return newError(CodeProviderError, msgEventDataTooLarge, r.opts.MaxEventDataBytes)
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if isTerminalState(x.state()) {
		return nil
	}
	err := r.enqueue(x, change{at: now(), events: []newEvent{{typ: eventType, data: data}}, byProvider: true, checkpoint: checkpoint})
	return r.refuseOverLimit(x, err)
}
