package backend

import (
	"bytes"
	"encoding/json"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// emit validates a provider emission (docs/protocol.md §4.4) and appends it.
func (x *execution) emit(checkpoint []byte, eventType api.StandardEventType, data api.JSONObject) error {
	switch eventType {
	case api.StandardEventTypeOutputTextDelta, api.StandardEventTypeProviderEvent:
	case api.StandardEventTypeArtifactCreated:
		in, err := artifactInputFromData(data)
		if err != nil {
			return err
		}
		return x.emitArtifact(checkpoint, in)
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
	return x.appendProviderEvent(checkpoint, newEvent{typ: eventType, data: raw})
}

// appendProviderEvent appends already-validated provider data, with the provider's checkpoint
// when it gave one (nil: none). Emissions while cancelling are appended; once terminal they are
// ignored (docs/protocol.md §4.4, §8).
func (x *execution) appendProviderEvent(checkpoint []byte, ne newEvent) error {
	if ne.dataLen() > x.rt.opts.MaxEventDataBytes {
		return newError(CodeProviderError, msgEventDataTooLarge, x.rt.opts.MaxEventDataBytes)
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if isTerminalState(x.state()) {
		return nil
	}
	err := x.enqueueEvent(change{at: now(), byProvider: true, checkpoint: checkpoint}, ne)
	return x.refuseOverLimit(err)
}
