package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Codes the HTTP layer adds to the runtime's catalogue (harness.yaml's ErrorCode enum).
const (
	codeMethodNotAllowed = string(api.ErrorCodeMETHODNOTALLOWED)
)

// Messages of the reference (docs/protocol.md §3.2) that the HTTP layer owns.
const (
	msgInvalidJSON           = "Request body is not valid JSON"
	msgBodyRequired          = "Request body is required"
	msgInvalidConversation   = "Invalid conversation request"
	msgInvalidExecution      = "Invalid execution request"
	msgInvalidCancellation   = "Invalid cancellation request"
	msgInvalidActionResponse = "Invalid action response"
	msgInvalidAfter          = "after must be a non-negative integer"
	msgInvalidLastEventID    = "Last-Event-ID must be a non-negative integer"
	msgInvalidLimit          = "limit must be a positive integer"
	msgSuffixInvalid         = "Path parameter suffix is invalid"
	msgUnexpected            = "Unexpected server error"
	msgBodyTimeout           = "Request body was not received in time"
)

// Reasons of the field details that several checks share (the message stays the reference's;
// the reason is the harness-edge addition in details, see invalidBodyField).
const (
	reasonObject         = "must be a JSON object (finite numbers only)"
	reasonNonEmptyString = "required, and must be a non-empty string"
	reasonNotUTF8        = "holds bytes that are not UTF-8: JSON text must be UTF-8 (RFC 8259)"
)

// reasonTooDeep names the nesting bound a body broke (backend.MaxJSONDepth for each value).
var reasonTooDeep = fmt.Sprintf("nested more than %d levels deep", backend.MaxJSONDepth)

// problem is an error answer: the HTTP status and the Problem envelope it carries.
type problem struct {
	status int
	body   api.Problem
}

// validationError is a 400 VALIDATION_ERROR as a backend error, so it can also travel through
// backend.RespondToAction's decode callback unchanged.
func validationError(message string) *backend.Error {
	return &backend.Error{Code: backend.CodeValidation, Message: message}
}

func errSuffixInvalid() *backend.Error { return validationError(msgSuffixInvalid) }

// errBodyTimeout is returned by readBody when the body did not arrive before the server's read
// deadline. It answers 408 with VALIDATION_ERROR, the protocol's code for every other fault of a
// request body (absent, malformed, too large: docs/protocol.md §3.2); the status tells a
// client that the same request may succeed if sent again, faster.
var errBodyTimeout = errors.New("proxy: the request body did not arrive before the read deadline")

// bodyTooLargeError is returned by readBody when the body exceeds the limit.
type bodyTooLargeError struct{ limit int64 }

func (e *bodyTooLargeError) Error() string {
	return "Request body exceeds the limit of " + strconv.FormatInt(e.limit, 10) + " bytes"
}

// statusOf is the reference's status for each runtime code. Codes that are never a caller's
// fault (PROVIDER_ERROR, INTERNAL_ERROR, anything unknown) become 500, as the reference coerces
// every status other than 400, 404, 409 and 422.
func statusOf(code backend.Code) int {
	switch code {
	case backend.CodeValidation:
		return http.StatusBadRequest
	case backend.CodeNotFound, backend.CodeProviderNotFound, backend.CodeActionNotFound:
		return http.StatusNotFound
	case backend.CodeIdempotencyConflict, backend.CodeInvalidState, backend.CodeActionAlreadyResolved, backend.CodeConversationBusy:
		return http.StatusConflict
	case backend.CodeCapabilityUnsupported:
		return http.StatusUnprocessableEntity
	case backend.CodeRateLimited:
		return http.StatusTooManyRequests
	case backend.CodeUnavailable:
		return http.StatusServiceUnavailable
	case backend.CodeCursorExpired:
		return http.StatusGone
	default:
		return http.StatusInternalServerError
	}
}

// problemOf maps an error to its answer. ok is false when the error is unexpected: the caller
// logs it, and the client only ever sees "Unexpected server error" (internal messages can
// carry paths or provider output).
func problemOf(err error) (p problem, expected bool) {
	var tooLarge *bodyTooLargeError
	if errors.As(err, &tooLarge) {
		return problem{
			status: http.StatusRequestEntityTooLarge,
			body:   api.Problem{Code: string(backend.CodeValidation), Message: tooLarge.Error()},
		}, true
	}
	if errors.Is(err, errBodyTimeout) {
		return problem{
			status: http.StatusRequestTimeout,
			body:   api.Problem{Code: string(backend.CodeValidation), Message: msgBodyTimeout},
		}, true
	}
	var be *backend.Error
	if errors.As(err, &be) {
		status := statusOf(be.Code)
		if status == http.StatusInternalServerError || be.Message == "" {
			return internalProblem(), false
		}
		body := api.Problem{Code: string(be.Code), Message: be.Message}
		// CAPABILITY_UNSUPPORTED carries the reference's details and VALIDATION_ERROR names the
		// field (an extension); an empty details object is left out, so every other Problem has
		// exactly the reference's two keys.
		if len(be.Details) > 0 {
			details := be.Details
			body.Details = &details
		}
		return problem{status: status, body: body}, true
	}
	return internalProblem(), false
}

func internalProblem() problem {
	return problem{
		status: http.StatusInternalServerError,
		body:   api.Problem{Code: string(backend.CodeInternal), Message: msgUnexpected},
	}
}

// writeError answers err as a Problem, logging it first when it was unexpected.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p, expected := problemOf(err)
	switch {
	case expected:
	case r.Context().Err() != nil:
		// The client left (or the server is closing the connection): nobody reads the answer
		// and nothing is wrong with the server.
		h.log.Debug("harness: request ended by its client", "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
	default:
		h.logFailure("harness: request failed", err, "method", r.Method, "path", r.URL.EscapedPath())
	}
	writeProblem(w, p)
}

// logFailure logs an unexpected failure of a request or a stream. Those repeat: while the disk
// is full every request that writes fails alike, so a burst of failures with the same root
// cause is one line and then a summary with a count every requestErrorLogWindow (package
// logburst), as the runtime does with its store errors. A failure the runtime has logged
// already (a damaged stored record: once per record, not per request) is left at debug level.
func (h *Handler) logFailure(msg string, err error, attrs ...any) {
	var be *backend.Error
	if errors.As(err, &be) && be.Logged() {
		h.log.Debug(msg, append(attrs, "err", err)...)
		return
	}
	h.failures.Error(msg, err, attrs...)
}

func writeProblem(w http.ResponseWriter, p problem) {
	switch p.status {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", retryAfterRateLimited)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", retryAfterUnavailable)
	}
	writeJSON(w, p.status, p.body)
}

func routeNotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, problem{
		status: http.StatusNotFound,
		body: api.Problem{
			Code:    string(backend.CodeNotFound),
			Message: "Route not found: " + r.Method + " " + r.URL.EscapedPath(),
		},
	})
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeProblem(w, problem{
		status: http.StatusMethodNotAllowed,
		body: api.Problem{
			Code:    codeMethodNotAllowed,
			Message: "Method " + r.Method + " is not allowed on this route",
		},
	})
}
