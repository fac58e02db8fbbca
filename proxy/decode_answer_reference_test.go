package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// refDecodeAnswerExtensions is decodeAnswerExtensions written with encoding/json's reflective
// decoding and its token walk (for the order of the members), the reference the differential
// fuzz target compares the scanning decoder with.
func refDecodeAnswerExtensions(m members, body []byte, resp *api.ActionResponse) error {
	invalid := func(pointer, reason string) error {
		return invalidBodyField(msgInvalidActionResponse, pointer, reason)
	}
	if raw, present := m["decision"]; present {
		d, ok := refStringValue(raw)
		if !ok || !api.Decision(d).Valid() {
			return invalid("/decision", "must be one of approve, reject, edit, respond")
		}
		decision := api.Decision(d)
		resp.Decision = &decision
	}
	if raw, present := m["message"]; present {
		text, ok := refStringValue(raw)
		if !ok || !utf16LenWithin(text, 1, approvals.MaxMessageUnits) {
			return invalid("/message", "must be a string of 1 to "+strconv.Itoa(approvals.MaxMessageUnits)+" characters")
		}
		resp.Message = &text
	}
	if raw, present := m["arguments"]; present {
		args, ok := refObjectValue(raw)
		if !ok {
			return invalid("/arguments", reasonObject)
		}
		resp.Arguments = &args
	}
	if raw, present := m["optionId"]; present {
		id, ok := refStringValue(raw)
		if !ok || id == "" {
			return invalid("/optionId", reasonNonEmptyString)
		}
		if strings.Contains(id, "\x00") {
			return invalid("/optionId", reasonNUL)
		}
		resp.OptionID = &id
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		if !slices.Contains(answerMembers, key) {
			return unknownAnswerMember(key, raw)
		}
	}
	return nil
}
