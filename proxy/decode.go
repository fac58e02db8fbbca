package proxy

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Request decoding follows the reference (docs/protocol.md §2.1) rather than
// encoding/json's defaults, which differ in three ways that clients can observe:
//
//   - encoding/json matches keys case-insensitively ({"INPUT": …} would fill Input); the
//     reference ignores unknown keys, and "INPUT" is unknown. Bodies are therefore decoded into
//     their top-level members first and each field is looked up by its exact name.
//   - encoding/json treats null as "leave the field alone"; the reference rejects null for
//     every optional field except ActionResponse.value (a JSONValue, which may be null).
//   - a number that overflows float64 (1e400) is valid JSON syntax, so it is a shape error
//     with the route's message, not "Request body is not valid JSON".
//
// Two rules are harness-edge's own (the reference has neither): a body may nest objects and
// arrays at most maxBodyDepth levels, so every value in it (config, metadata, an action
// response's value) at most backend.MaxJSONDepth; and its strings must be UTF-8, as RFC 8259
// requires of JSON text (the reference, and encoding/json, replace other bytes with U+FFFD, so
// the input, the metadata or the config would be stored other than sent). A body that breaks
// either but is valid JSON syntax is a shape error with the route's message, found where the
// reference validates the shape; invalid JSON still answers "Request body is not valid JSON"
// first.
//
// Each decoder returns a *backend.Error with code VALIDATION_ERROR and the reference's exact
// message, so respondToAction can hand its error to the runtime's decode callback as is.

// Limits of the reference, counted in UTF-16 code units as JavaScript's String.length does.
const (
	maxIdempotencyKeyUnits = 200
	maxReasonUnits         = 500
)

// members are the top-level members of a JSON object body, by exact key. For a repeated key
// the last one wins, as in JavaScript's JSON.parse.
type members map[string]json.RawMessage

var (
	errBodyRequired = invalidBodyField(msgBodyRequired, "", "a JSON body is required")
	errInvalidJSON  = invalidBodyField(msgInvalidJSON, "", "not valid JSON")
	errNotAnObject  = errors.New("proxy: body is valid JSON but not an object")
	errTooDeep      = errors.New("proxy: body is valid JSON but nested too deeply")
	errNotUTF8      = errors.New("proxy: body is valid JSON syntax but its strings are not UTF-8")
)

// maxBodyDepth is the nesting bound of a whole body: the body object is the first level, so
// the values of its members may nest backend.MaxJSONDepth levels.
const maxBodyDepth = backend.MaxJSONDepth + 1

// decodeMembers parses a JSON object body. It tells a syntax error (errInvalidJSON) from valid
// JSON of another type such as null, [] or "x" (errNotAnObject), from valid JSON nested
// deeper than maxBodyDepth (errTooDeep) and from valid JSON syntax whose strings are not UTF-8
// (errNotUTF8), because they answer with different messages. The depth and the UTF-8 are found
// in one pass over the body (backend.ScanJSONText).
func decodeMembers(body []byte) (members, error) {
	tooDeep, notUTF8 := backend.ScanJSONText(body, maxBodyDepth)
	if tooDeep {
		// Rare (hostile) path: tell invalid JSON from valid but deep JSON with a syntax check
		// that has no depth limit of its own (encoding/json's scanner stops at 10,000 levels
		// with a syntax error).
		if !validJSONAnyDepth(body) {
			return nil, errInvalidJSON
		}
		return nil, errTooDeep
	}
	// json.Valid is the syntax check encoding/json's Unmarshal starts with (the same scanner,
	// no reflection); past it the body is walked by jsonscan.go, which decodes as Unmarshal does.
	if !json.Valid(body) {
		return nil, errInvalidJSON
	}
	if firstNonSpace(body) != '{' { // null, an array, a string, a number, a boolean
		return nil, errNotAnObject
	}
	if notUTF8 {
		return nil, errNotUTF8
	}
	if at, dup := firstDuplicate(body); dup { // jsonscan_dup.go
		return nil, duplicateMember(at)
	}
	m := make(members, 8)
	scanValidMembers(body, func(key string, raw []byte) { m[key] = raw })
	return m, nil
}

// firstNonSpace is the first byte of body that is not JSON whitespace (0 if none).
func firstNonSpace(body []byte) byte {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// isBlank reports whether a body counts as absent: empty or only whitespace, where whitespace
// is what JavaScript's String.prototype.trim removes.
func isBlank(body []byte) bool {
	for len(body) > 0 {
		switch c := body[0]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			body = body[1:]
		case c < 0x80:
			return false
		default:
			r, size := utf8.DecodeRune(body)
			if !isJSWhitespace(r) {
				return false
			}
			body = body[size:]
		}
	}
	return true
}

// isJSWhitespace is ECMAScript's WhiteSpace and LineTerminator for a non-ASCII rune: the
// space separators (Zs, NBSP included), the BOM, and the line and paragraph separators. It
// differs from unicode.IsSpace only by U+0085 (NEL), which JavaScript does not trim.
func isJSWhitespace(r rune) bool {
	return unicode.Is(unicode.Zs, r) || r == '\uFEFF' || r == '\u2028' || r == '\u2029'
}

// decodeObjectBody parses an optional or required body into its members, with the route's
// message for valid JSON of the wrong type. A blank optional body is an empty object.
func decodeObjectBody(body []byte, required bool, shapeMessage string) (members, error) {
	if isBlank(body) {
		if required {
			return nil, errBodyRequired
		}
		return members{}, nil
	}
	m, err := decodeMembers(body)
	if errors.Is(err, errNotAnObject) {
		return nil, invalidBodyField(shapeMessage, "", reasonObject)
	}
	if errors.Is(err, errTooDeep) {
		return nil, invalidBodyField(shapeMessage, "", reasonTooDeep)
	}
	if errors.Is(err, errNotUTF8) {
		return nil, invalidBodyField(shapeMessage, "", reasonNotUTF8)
	}
	if dup, ok := err.(duplicateMember); ok {
		return nil, invalidBodyField(shapeMessage, string(dup), reasonDuplicate)
	}
	return m, err
}

// duplicateMember is valid JSON with a member name repeated in one object; it holds the
// pointer of the repetition.
type duplicateMember string

func (d duplicateMember) Error() string { return "proxy: body repeats the member " + string(d) }

// reasonDuplicate is the reason of a repeated member name, in every body.
const reasonDuplicate = "repeats a member name of its object: each name may appear once"

// decodeConversationRequest decodes the optional CreateConversationRequest body. The metadata
// is never nil: an absent one is {}.
func decodeConversationRequest(body []byte) (api.CreateConversationRequest, error) {
	var req api.CreateConversationRequest
	m, err := decodeObjectBody(body, false, msgInvalidConversation)
	if err != nil {
		return req, err
	}
	metadata := api.JSONObject{}
	if raw, ok := m["metadata"]; ok {
		if metadata, ok = objectValue(raw); !ok {
			return req, invalidBodyField(msgInvalidConversation, "/metadata", reasonObject)
		}
	}
	req.Metadata = &metadata
	if req.BusyPolicy, err = busyPolicyMember(m); err != nil {
		return req, err
	}
	return req, nil
}

// busyPolicyMember decodes the optional busyPolicy member (an extension of both requests that
// take one): absent is nil; anything but one of the policies is a VALIDATION_ERROR whose
// message names them, since no reference client sends the field.
func busyPolicyMember(m members) (*api.BusyPolicy, error) {
	raw, present := m["busyPolicy"]
	if !present {
		return nil, nil
	}
	name, ok := stringValue(raw)
	if p := api.BusyPolicy(name); ok && backend.ValidBusyPolicy(p) {
		return &p, nil
	}
	return nil, invalidBodyField(msgInvalidBusyPolicy, "/busyPolicy", "must be one of "+backend.BusyPolicies())
}

// msgInvalidBusyPolicy is the message of an unknown busy policy, in both requests.
var msgInvalidBusyPolicy = "busyPolicy must be one of " + backend.BusyPolicies()

// decodeStartExecutionRequest decodes the required StartExecutionRequest body.
// maxCapabilities bounds requiredCapabilities (a harness-edge limit with its own message).
func decodeStartExecutionRequest(body []byte, maxCapabilities int) (api.StartExecutionRequest, error) {
	var req api.StartExecutionRequest
	m, err := decodeObjectBody(body, true, msgInvalidExecution)
	if err != nil {
		return req, err
	}
	invalid := func(pointer, reason string) error {
		return invalidBodyField(msgInvalidExecution, pointer, reason)
	}

	var ok bool
	if req.ConversationID, ok = requiredString(m, "conversationId"); !ok || req.ConversationID == "" {
		return req, invalid("/conversationId", reasonNonEmptyString)
	}
	if req.ProviderID, ok = requiredString(m, "providerId"); !ok || req.ProviderID == "" {
		return req, invalid("/providerId", reasonNonEmptyString)
	}
	if hasNUL(req.ConversationID) {
		return req, invalid("/conversationId", reasonNUL)
	}
	if hasNUL(req.ProviderID) {
		return req, invalid("/providerId", reasonNUL)
	}
	if req.Input, ok = requiredString(m, "input"); !ok {
		return req, invalid("/input", "required, and must be a string")
	}
	if raw, present := m["requiredCapabilities"]; present {
		caps, ok := nonEmptyStrings(raw)
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
		config, ok := objectValue(raw)
		if !ok {
			return req, invalid("/config", reasonObject)
		}
		req.Config = config
	}
	if raw, present := m["idempotencyKey"]; present {
		key, ok := stringValue(raw)
		if !ok || !utf16LenWithin(key, 1, maxIdempotencyKeyUnits) {
			return req, invalid("/idempotencyKey", "must be a string of 1 to 200 characters")
		}
		req.IdempotencyKey = &key
	}
	if req.BusyPolicy, err = busyPolicyMember(m); err != nil {
		return req, err
	}
	if req.ActionTimeoutSeconds, err = actionTimeoutMember(m); err != nil { // approvals.go
		return req, err
	}
	return req, nil
}

// decodeCancelRequest decodes the optional CancelExecutionRequest body; reason is nil when
// absent.
func decodeCancelRequest(body []byte) (reason *string, err error) {
	m, err := decodeObjectBody(body, false, msgInvalidCancellation)
	if err != nil {
		return nil, err
	}
	raw, present := m["reason"]
	if !present {
		return nil, nil
	}
	text, ok := stringValue(raw)
	if !ok || !utf16LenWithin(text, 1, maxReasonUnits) {
		return nil, invalidBodyField(msgInvalidCancellation, "/reason", "must be a string of 1 to 500 characters")
	}
	return &text, nil
}

// decodeActionResponse decodes the required ActionResponse body in one pass but reports two
// kinds of failure separately, because the reference checks them at different times: bodyErr
// (absent body, invalid JSON) before anything else, shapeErr ("Invalid action response") only
// after the execution, the action and the state have been checked.
func decodeActionResponse(body []byte) (resp api.ActionResponse, bodyErr, shapeErr error) {
	if isBlank(body) {
		return resp, errBodyRequired, nil
	}
	m, err := decodeMembers(body)
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
	if dup, ok := err.(duplicateMember); ok {
		return resp, nil, invalid(string(dup), reasonDuplicate)
	}
	if err != nil {
		return resp, err, nil
	}
	if raw, present := m["approved"]; present {
		approved, ok := boolValue(raw)
		if !ok {
			return resp, nil, invalid("/approved", "must be true or false")
		}
		resp.Approved = &approved
	}
	if raw, present := m["value"]; present {
		// Any JSON value, null included: null is an answer, not an absence.
		value, ok := decodeValidValue(raw)
		if !ok {
			return resp, nil, invalid("/value", "must be a JSON value with finite numbers")
		}
		resp.Value = &value
	}
	if raw, present := m["metadata"]; present {
		metadata, ok := objectValue(raw)
		if !ok {
			return resp, nil, invalid("/metadata", reasonObject)
		}
		resp.Metadata = &metadata
	}
	if err := decodeAnswerExtensions(m, body, &resp); err != nil { // decode_answer.go
		return resp, nil, err
	}
	return resp, nil, nil
}

// hasNUL reports whether an id or a name holds U+0000, which none may (PostgreSQL's text
// cannot store it, and no id the server makes has one).
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
