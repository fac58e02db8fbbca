package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// An action's answer is decoded strictly (docs/protocol.md, "Approvals"): the reference drops
// members it does not know, so {"approve": true} — a typo — answered 200 and quietly denied the
// run. Here a member the API does not know is a 400 that names it and what was probably meant,
// and the action stays pending (the body is checked last, §7.2). The members harness-edge adds
// (decision, message, arguments, optionId) are decoded here; whether they fit the action is the
// runtime's check (package approvals), made against the action itself.

// answerMembers are the members of an ActionResponse: the reference's and harness-edge's.
var answerMembers = []string{"approved", "value", "metadata", "decision", "message", "arguments", "optionId"}

// answerAliases are names people reach for, and the member they mean.
var answerAliases = map[string]string{
	"approve": "approved", "approval": "approved", "accept": "approved", "accepted": "approved", "allow": "approved",
	"args": "arguments", "argument": "arguments", "input": "arguments", "params": "arguments", "parameters": "arguments",
	"reason": "message", "comment": "message", "note": "message", "feedback": "message",
	"option": "optionId", "option_id": "optionId", "optionID": "optionId", "choice": "optionId",
	"answer": "value", "text": "value",
	"action": "decision", "verdict": "decision",
}

// answerWrappers are members under which people nest the whole answer.
var answerWrappers = []string{"response", "actionResponse", "body", "data", "answer"}

// decodeAnswerExtensions decodes harness-edge's members of an ActionResponse into resp, then
// refuses the first member (in body order) the API does not know.
func decodeAnswerExtensions(m members, body []byte, resp *api.ActionResponse) error {
	invalid := func(pointer, reason string) error {
		return invalidBodyField(msgInvalidActionResponse, pointer, reason)
	}
	if raw, present := m["decision"]; present {
		d, ok := stringValue(raw)
		decision := api.Decision(d)
		if !ok || !decision.Valid() {
			return invalid("/decision", "must be one of approve, reject, edit, respond")
		}
		resp.Decision = &decision
	}
	if raw, present := m["message"]; present {
		text, ok := stringValue(raw)
		if !ok || !utf16LenWithin(text, 1, backend.MaxMessageUnits) {
			return invalid("/message", "must be a string of 1 to "+strconv.Itoa(backend.MaxMessageUnits)+" characters")
		}
		resp.Message = &text
	}
	if raw, present := m["arguments"]; present {
		args, ok := objectValue(raw)
		if !ok {
			return invalid("/arguments", reasonObject)
		}
		resp.Arguments = &args
	}
	if raw, present := m["optionId"]; present {
		id, ok := stringValue(raw)
		if !ok || id == "" {
			return invalid("/optionId", reasonNonEmptyString)
		}
		if hasNUL(id) {
			return invalid("/optionId", reasonNUL)
		}
		resp.OptionID = &id
	}
	if len(m) == 0 || onlyKnown(m) {
		return nil
	}
	var unknown string
	var unknownRaw []byte
	found := false // not unknown != "": the empty name is a member name too
	scanValidMembers(body, func(key string, raw []byte) {
		if !found && !slices.Contains(answerMembers, key) {
			unknown, unknownRaw, found = key, raw, true
		}
	})
	return unknownAnswerMember(unknown, unknownRaw)
}

func onlyKnown(m members) bool {
	for key := range m {
		if !slices.Contains(answerMembers, key) {
			return false
		}
	}
	return true
}

// unknownAnswerMember is the 400 for a member the API does not know, with what was probably
// meant: the answer itself for a wrapper ({"response": {"approved": true}} → its inside), else
// the member's right name.
func unknownAnswerMember(name string, raw []byte) error {
	pointer := "/" + pointerToken(name)
	reason := "is not a member of an action response (" + joinNames(answerMembers) + ")"
	if slices.Contains(answerWrappers, name) && len(raw) > 0 && raw[0] == '{' {
		var inner bytes.Buffer
		if json.Compact(&inner, raw) == nil {
			return invalidBodyFieldSuggesting(msgInvalidActionResponse, pointer,
				reason+": send the answer's members at the top level of the body", inner.String())
		}
	}
	suggestion := answerAliases[name]
	if suggestion == "" {
		suggestion = backend.ClosestName(name, answerMembers)
	}
	if suggestion != "" {
		reason += "; did you mean " + suggestion + "?"
	}
	return invalidBodyFieldSuggesting(msgInvalidActionResponse, pointer, reason, suggestion)
}

// pointerToken escapes a member name for a JSON Pointer (RFC 6901).
func pointerToken(name string) string {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '~':
			out = append(out, "~0"...)
		case '/':
			out = append(out, "~1"...)
		default:
			out = append(out, name[i])
		}
	}
	return string(out)
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// closestName is backend.ClosestName, for the proxy's own member names.
func closestName(name string, names []string) string { return backend.ClosestName(name, names) }
