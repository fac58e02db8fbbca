package proxy

import (
	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Field errors belong to the HTTP binding: only here is there a body, a query parameter or a
// header to point at. A VALIDATION_ERROR keeps the reference's message ("Invalid execution request") but, as a
// harness-edge extension, says in its details which part of the request it is about, so a
// caller does not have to guess which of five fields was wrong. The shape is the
// ValidationErrorDetails schema of harness.yaml: {"errors": [FieldError…]}, where each
// FieldError names a JSON Pointer into the body, a query parameter or a header, plus a reason
// for people. The reference sends no details for this code, so no reference client reads them.

// invalidBodyField is a VALIDATION_ERROR about the body member at pointer (RFC 6901; "" is
// the whole body).
func invalidBodyField(message, pointer, reason string) *backend.Error {
	return invalidAt(message, "pointer", pointer, reason)
}

// invalidBodyFieldSuggesting is invalidBodyField with what was probably meant (a member's right
// name, or the body to send instead); "" adds nothing.
func invalidBodyFieldSuggesting(message, pointer, reason, suggestion string) *backend.Error {
	e := invalidBodyField(message, pointer, reason)
	if suggestion != "" {
		e.Details["errors"].([]any)[0].(map[string]any)["suggestion"] = suggestion
	}
	return e
}

// invalidParameter is a VALIDATION_ERROR about the query parameter name.
func invalidParameter(message, name, reason string) *backend.Error {
	return invalidAt(message, "parameter", name, reason)
}

// invalidHeader is a VALIDATION_ERROR about the request header name.
func invalidHeader(message, name, reason string) *backend.Error {
	return invalidAt(message, "header", name, reason)
}

// invalidAt builds the details as a plain JSON object (Details is deep-copied and encoded as
// one) with the keys of the generated api.FieldError.
func invalidAt(message, kind, where, reason string) *backend.Error {
	entry := map[string]any{kind: where, "reason": reason}
	return &backend.Error{Code: backend.CodeValidation, Message: message, Details: api.JSONObject{"errors": []any{entry}}}
}
