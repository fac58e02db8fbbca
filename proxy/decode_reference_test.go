package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/conversation"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// The request decoders as they were before the non-reflective scan (jsonscan.go): encoding/json's
// reflective Unmarshal into a map of raw members, then into each field. Kept, renamed, only as
// the reference that FuzzDecodersMatchTheReflectiveReference compares the decoders with; the
// rules added since (a body's strings must be UTF-8) are added here independently (utf8.Valid).

// decodeMembers parses a JSON object body. It tells a syntax error (errInvalidJSON) from valid
// JSON of another type such as null, [] or "x" (errNotAnObject) and from valid JSON nested
// deeper than maxBodyDepth (errTooDeep), because they answer with different messages.
func refDecodeMembers(body []byte) (members, error) {
	if backend.ExceedsJSONDepth(body, maxBodyDepth) {
		// Rare (hostile) path: tell invalid JSON from valid but deep JSON with a syntax check
		// that has no depth limit of its own (encoding/json's scanner stops at 10,000 levels
		// with a syntax error).
		if !validJSONAnyDepth(body) {
			return nil, errInvalidJSON
		}
		return nil, errTooDeep
	}
	var m members
	if err := json.Unmarshal(body, &m); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, errInvalidJSON
		}
		return nil, errNotAnObject
	}
	if m == nil { // the body was the literal null
		return nil, errNotAnObject
	}
	if !utf8.Valid(body) { // outside strings, valid JSON is ASCII
		return nil, errNotUTF8
	}
	if at, dup := refFirstDuplicate(body); dup {
		return nil, duplicateMember(at)
	}
	return m, nil
}

// decodeObjectBody parses an optional or required body into its members, with the route's
// message for valid JSON of the wrong type. A blank optional body is an empty object.
func refDecodeObjectBody(body []byte, required bool, shapeMessage string) (members, error) {
	if isBlank(body) {
		if required {
			return nil, errBodyRequired
		}
		return members{}, nil
	}
	m, err := refDecodeMembers(body)
	if errors.Is(err, errNotAnObject) {
		return nil, invalidBodyField(shapeMessage, "", reasonObject)
	}
	if errors.Is(err, errTooDeep) {
		return nil, invalidBodyField(shapeMessage, "", reasonTooDeep)
	}
	if errors.Is(err, errNotUTF8) {
		return nil, invalidBodyField(shapeMessage, "", reasonNotUTF8)
	}
	var dup duplicateMember
	if errors.As(err, &dup) {
		return nil, invalidBodyField(shapeMessage, string(dup), reasonDuplicate)
	}
	return m, err
}

// decodeConversationRequest decodes the optional CreateConversationRequest body. The metadata
// is never nil: an absent one is {}.
func refDecodeConversationRequest(body []byte) (api.CreateConversationRequest, error) {
	var req api.CreateConversationRequest
	m, err := refDecodeObjectBody(body, false, msgInvalidConversation)
	if err != nil {
		return req, err
	}
	metadata := api.JSONObject{}
	if raw, ok := m["metadata"]; ok {
		if metadata, ok = refObjectValue(raw); !ok {
			return req, invalidBodyField(msgInvalidConversation, "/metadata", reasonObject)
		}
	}
	req.Metadata = &metadata
	req.BusyPolicy, err = refBusyPolicy(m)
	return req, err
}

// refBusyPolicy is busyPolicyMember with the reflective string decoder.
func refBusyPolicy(m members) (*api.BusyPolicy, error) {
	raw, present := m["busyPolicy"]
	if !present {
		return nil, nil
	}
	name, ok := refStringValue(raw)
	if p := api.BusyPolicy(name); ok && conversation.Valid(p) {
		return &p, nil
	}
	return nil, invalidBodyField(msgInvalidBusyPolicy, "/busyPolicy", "must be one of "+conversation.Allowed())
}

// decodeStartExecutionRequest decodes the required StartExecutionRequest body.
// maxCapabilities bounds requiredCapabilities (a harness-edge limit with its own message).
func refDecodeStartExecutionRequest(body []byte, maxCapabilities int) (api.StartExecutionRequest, error) {
	var req api.StartExecutionRequest
	m, err := refDecodeObjectBody(body, true, msgInvalidExecution)
	if err != nil {
		return req, err
	}
	invalid := func(pointer, reason string) error {
		return invalidBodyField(msgInvalidExecution, pointer, reason)
	}

	var ok bool
	if req.ConversationID, ok = refRequiredString(m, "conversationId"); !ok || req.ConversationID == "" {
		return req, invalid("/conversationId", reasonNonEmptyString)
	}
	if req.ProviderID, ok = refRequiredString(m, "providerId"); !ok || req.ProviderID == "" {
		return req, invalid("/providerId", reasonNonEmptyString)
	}
	if hasNUL(req.ConversationID) {
		return req, invalid("/conversationId", reasonNUL)
	}
	if hasNUL(req.ProviderID) {
		return req, invalid("/providerId", reasonNUL)
	}
	if req.Input, ok = refRequiredString(m, "input"); !ok {
		return req, invalid("/input", "required, and must be a string")
	}
	if raw, present := m["requiredCapabilities"]; present {
		caps, ok := refNonEmptyStrings(raw)
		if !ok {
			return req, invalid("/requiredCapabilities", "must be an array of non-empty strings")
		}
		if slices.ContainsFunc(caps, hasNUL) {
			return req, invalid("/requiredCapabilities", reasonNUL)
		}
		if len(caps) > maxCapabilities {
			return req, invalidBodyField(tooManyCapabilitiesMessage(maxCapabilities), "/requiredCapabilities",
				"must list at most "+strconv.Itoa(maxCapabilities)+" capabilities")
		}
		req.RequiredCapabilities = &caps
	}
	if raw, present := m["config"]; present {
		config, ok := refObjectValue(raw)
		if !ok {
			return req, invalid("/config", reasonObject)
		}
		req.Config = config
	}
	if raw, present := m["idempotencyKey"]; present {
		key, ok := refStringValue(raw)
		if !ok || !utf16LenWithin(key, 1, maxIdempotencyKeyUnits) {
			return req, invalid("/idempotencyKey", "must be a string of 1 to 200 characters")
		}
		req.IdempotencyKey = &key
	}
	if req.BusyPolicy, err = refBusyPolicy(m); err != nil {
		return req, err
	}
	if raw, present := m["actionTimeoutSeconds"]; present {
		var f float64
		err := json.Unmarshal(raw, &f)
		req.ActionTimeoutSeconds, err = checkedActionTimeout(f, err == nil)
		return req, err
	}
	return req, nil
}

// decodeCancelRequest decodes the optional CancelExecutionRequest body; reason is nil when
// absent.
func refDecodeCancelRequest(body []byte) (reason *string, err error) {
	m, err := refDecodeObjectBody(body, false, msgInvalidCancellation)
	if err != nil {
		return nil, err
	}
	raw, present := m["reason"]
	if !present {
		return nil, nil
	}
	text, ok := refStringValue(raw)
	if !ok || !utf16LenWithin(text, 1, maxReasonUnits) {
		return nil, invalidBodyField(msgInvalidCancellation, "/reason", "must be a string of 1 to 500 characters")
	}
	return &text, nil
}

// decodeActionResponse decodes the required ActionResponse body in one pass but reports two
// kinds of failure separately, because the reference checks them at different times: bodyErr
// (absent body, invalid JSON) before anything else, shapeErr ("Invalid action response") only
// after the execution, the action and the state have been checked.
func refDecodeActionResponse(body []byte) (resp api.ActionResponse, bodyErr, shapeErr error) {
	if isBlank(body) {
		return resp, errBodyRequired, nil
	}
	m, err := refDecodeMembers(body)
	invalid := func(pointer, reason string) error {
		return invalidBodyField(msgInvalidActionResponse, pointer, reason)
	}
	if errors.Is(err, errNotAnObject) {
		return resp, nil, invalid("", reasonObject)
	}
	if errors.Is(err, errTooDeep) {
		return resp, nil, invalid("", reasonTooDeep)
	}
	if errors.Is(err, errNotUTF8) {
		return resp, nil, invalid("", reasonNotUTF8)
	}
	var dup duplicateMember
	if errors.As(err, &dup) {
		return resp, nil, invalid(string(dup), reasonDuplicate)
	}
	if err != nil {
		return resp, err, nil
	}
	if raw, present := m["approved"]; present {
		approved, ok := refBoolValue(raw)
		if !ok {
			return resp, nil, invalid("/approved", "must be true or false")
		}
		resp.Approved = &approved
	}
	if raw, present := m["value"]; present {
		// Any JSON value, null included: null is an answer, not an absence.
		var value any
		if json.Unmarshal(raw, &value) != nil {
			return resp, nil, invalid("/value", "must be a JSON value with finite numbers")
		}
		resp.Value = &value
	}
	if raw, present := m["metadata"]; present {
		metadata, ok := refObjectValue(raw)
		if !ok {
			return resp, nil, invalid("/metadata", reasonObject)
		}
		resp.Metadata = &metadata
	}
	if err := refDecodeAnswerExtensions(m, body, &resp); err != nil {
		return resp, nil, err
	}
	return resp, nil, nil
}

func refRequiredString(m members, name string) (string, bool) {
	raw, present := m[name]
	if !present {
		return "", false
	}
	return refStringValue(raw)
}

// stringValue decodes a JSON string; null and every other type fail.
func refStringValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func refBoolValue(raw json.RawMessage) (value, ok bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// objectValue decodes a JSONObject: an object (not null, not an array) whose numbers are
// finite. encoding/json fails on a number that overflows float64, which is exactly the
// reference's rule that non-finite numbers are not JSON values.
func refObjectValue(raw json.RawMessage) (api.JSONObject, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var obj api.JSONObject
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	return obj, true
}

// nonEmptyStrings decodes an array whose items are all non-empty strings.
func refNonEmptyStrings(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, ok := refStringValue(item)
		if !ok || s == "" {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// refFirstDuplicate is the reference's duplicate check, written independently of
// jsonscan_dup.go: encoding/json's token stream (names already unescaped), with a set per open
// object, reporting the first repeated name in document order by its JSON Pointer. It is the
// rule of encoding/json/v2, which refuses duplicate names by default.
func refFirstDuplicate(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object   bool
		names    map[string]bool
		name     string // an object's current member
		haveName bool
		index    int // an array's items so far
	}
	var stack []*frame
	pointer := func() string {
		out := ""
		for _, f := range stack {
			if f.object {
				out += "/" + pointerToken(f.name)
			} else {
				out += "/" + strconv.Itoa(f.index-1)
			}
		}
		return out
	}
	// valueDone is called when a value ends; false when it was the whole body.
	valueDone := func() bool {
		if len(stack) == 0 {
			return false
		}
		stack[len(stack)-1].haveName = false
		return true
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && !top.haveName {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				if !valueDone() {
					return "", false
				}
				continue
			}
			name := tok.(string)
			top.name, top.haveName = name, true
			if top.names[name] {
				return pointer(), true
			}
			top.names[name] = true
			continue
		}
		if tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			if !valueDone() {
				return "", false
			}
			continue
		}
		if top != nil && !top.object {
			top.index++
		}
		if tok == json.Delim('{') || tok == json.Delim('[') {
			stack = append(stack, &frame{object: tok == json.Delim('{'), names: map[string]bool{}})
			continue
		}
		if !valueDone() {
			return "", false
		}
	}
}
