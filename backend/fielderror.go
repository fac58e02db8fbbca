package backend

import "github.com/harness-edge/harness-edge/sdk/api"

// A VALIDATION_ERROR keeps the reference's message ("Invalid execution request") but, as a
// harness-edge extension, says in its details which part of the request it is about, so a
// caller does not have to guess which of five fields was wrong. The shape is the
// ValidationErrorDetails schema of harness.yaml: {"errors": [FieldError…]}, where each
// FieldError names a JSON Pointer into the body, a query parameter or a header, plus a reason
// for people. The reference sends no details for this code, so no reference client reads them.

// InvalidBodyField is a VALIDATION_ERROR about the body member at pointer (RFC 6901; "" is
// the whole body).
func InvalidBodyField(message, pointer, reason string) *Error {
	return invalidAt(message, "pointer", pointer, reason)
}

// InvalidParameter is a VALIDATION_ERROR about the query parameter name.
func InvalidParameter(message, name, reason string) *Error {
	return invalidAt(message, "parameter", name, reason)
}

// InvalidHeader is a VALIDATION_ERROR about the request header name.
func InvalidHeader(message, name, reason string) *Error {
	return invalidAt(message, "header", name, reason)
}

// invalidAt builds the details as a plain JSON object (Details is deep-copied and encoded as
// one) with the keys of the generated api.FieldError.
func invalidAt(message, kind, where, reason string) *Error {
	entry := map[string]any{kind: where, "reason": reason}
	return &Error{Code: CodeValidation, Message: message, Details: api.JSONObject{"errors": []any{entry}}}
}
