package backend

import (
	"errors"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// msgInvalidAnswer is the reference's message for an answer of the wrong shape (§7.2); which
// member is wrong, and why, is in the details.
const msgInvalidAnswer = "Invalid action response"

// errInvalidAnswer is the VALIDATION_ERROR of an answer approvals.Check refused.
func errInvalidAnswer(err error) error {
	return validationError(msgInvalidAnswer, err)
}

// validationError is a VALIDATION_ERROR whose details name the member of the body (approvals'
// Invalid) in the shape of the HTTP binding's field errors (api.FieldError).
func validationError(message string, err error) error {
	var bad *approvals.Invalid
	if !errors.As(err, &bad) {
		return err
	}
	entry := map[string]any{"pointer": bad.Pointer, "reason": bad.Reason}
	if bad.Suggestion != "" {
		entry["suggestion"] = bad.Suggestion
	}
	return &Error{Code: CodeValidation, Message: message, Details: api.JSONObject{"errors": []any{entry}}}
}
