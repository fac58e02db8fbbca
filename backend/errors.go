package backend

import (
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Code is a protocol error code (docs/protocol.md §3.2): harness.yaml's ErrorCode enum,
// generated into package api. The HTTP status mapping lives in proxy.
type Code = api.ErrorCode

// The protocol's error codes, named for the runtime's callers.
const (
	CodeValidation            = api.ErrorCodeVALIDATIONERROR
	CodeNotFound              = api.ErrorCodeNOTFOUND
	CodeProviderNotFound      = api.ErrorCodePROVIDERNOTFOUND
	CodeCapabilityUnsupported = api.ErrorCodeCAPABILITYUNSUPPORTED
	CodeIdempotencyConflict   = api.ErrorCodeIDEMPOTENCYCONFLICT
	CodeInvalidState          = api.ErrorCodeINVALIDSTATE
	CodeActionNotFound        = api.ErrorCodeACTIONNOTFOUND
	CodeActionAlreadyResolved = api.ErrorCodeACTIONALREADYRESOLVED
	CodeProviderError         = api.ErrorCodePROVIDERERROR
	CodeInternal              = api.ErrorCodeINTERNALERROR
	// CodeUnavailable (503, with Retry-After) is an extension: this node cannot serve the
	// request now — its store does not answer in time, or it cannot vouch for its cluster lease
	// — and the same request may succeed in a moment, here or on another node.
	CodeUnavailable = api.ErrorCodeUNAVAILABLE
	// CodeCursorExpired (410) is an extension: a conversation's or tenant's stream cursor is
	// older than what the stream log keeps (docs/protocol.md, "Conversation and tenant streams").
	CodeCursorExpired = api.ErrorCodeCURSOREXPIRED
)

// Error is every failure a caller of the runtime can see. errors.As(err, &e) with e *Error works
// through wrapping. Details is set only for CAPABILITY_UNSUPPORTED.
type Error struct {
	Code    Code
	Message string
	Details api.JSONObject

	// cause keeps the underlying failure of an INTERNAL_ERROR (a store error, say) for logs and
	// errors.Is, without leaking it into Message, which is shown to remote callers.
	cause error
	// RetryAfter, when positive, is how many seconds a caller should wait before the same
	// request can succeed (BUDGET_EXCEEDED: until the budget's window ends); HTTP's Retry-After.
	RetryAfter int64

	// logged: the runtime has logged the cause already, once for every request that meets it
	// (a damaged record, see damaged.go).
	logged bool
}

// Error returns the message alone, so a provider that wraps or returns a refused call's error
// produces exactly the reference's execution error message; the code is e.Code.
func (e *Error) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

// Logged reports whether the runtime has logged the cause of this internal error already (a
// stored record it cannot decode is logged once, not once per request): a caller that logs
// failed requests can leave this one out, or log it at debug level.
func (e *Error) Logged() bool { return e.logged }

// Unwrap exposes the cause of an internal error.
func (e *Error) Unwrap() error { return e.cause }

// Problem renders the error as the wire envelope.
func (e *Error) Problem() api.Problem {
	p := api.Problem{Code: string(e.Code), Message: e.Message}
	if e.Details != nil {
		d := deepCopyObject(e.Details)
		p.Details = &d
	}
	return p
}

// ErrorCode returns the protocol code of err, or "" when err carries none.
func ErrorCode(err error) Code {
	if err == nil {
		return "" // most callers ask of a success: errors.As's target would escape, an allocation
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrStoreDamaged is matched (errors.Is) by the error Open returns when the store exists but
// cannot be used as it is (bbolt: an empty, truncated or inconsistent file).
var ErrStoreDamaged = store.ErrDamaged

// internalError hides a store or encoding failure behind a stable message; the cause stays
// reachable through errors.Unwrap for logging. A store that could not answer in time, or a
// write fenced because this node lost its lease, is UNAVAILABLE instead: retrying (through the
// load balancer, on another node) can succeed.
func internalError(op string, err error) *Error {
	return InternalError(op, err)
}

// InternalError is the error a caller sees for a failure of op that is not theirs (a store or
// encoding failure): INTERNAL_ERROR with a stable message, or UNAVAILABLE when the store did not
// answer in time or fenced a write of this node (retrying, through the balancer, can succeed).
// err stays reachable through errors.Unwrap for logs. For the runtime's own packages (cluster).
func InternalError(op string, err error) *Error {
	if errors.Is(err, store.ErrUnavailable) {
		return &Error{Code: CodeUnavailable, Message: msgStoreUnavailable, cause: fmt.Errorf("%s: %w", op, err)}
	}
	if errors.Is(err, store.ErrFenced) {
		return &Error{Code: CodeUnavailable, Message: msgLeaseUnsure, cause: fmt.Errorf("%s: %w", op, err)}
	}
	return &Error{Code: CodeInternal, Message: "Internal runtime error", cause: fmt.Errorf("%s: %w", op, err)}
}

// Messages of UNAVAILABLE.
const (
	msgStoreUnavailable = "The runtime's store did not answer in time; retry shortly"
	msgLeaseUnsure      = "This node cannot vouch for its cluster lease; retry shortly (another node may serve it)"
	msgLeaseBehind      = "This node is overloaded (its cluster lease renewals fall behind) and takes no new executions; retry shortly (another node may serve it)"
)

func errConversationNotFound(id string) *Error {
	return newError(CodeNotFound, "Conversation not found: %s", id)
}

func errExecutionNotFound(id string) *Error {
	return newError(CodeNotFound, "Execution not found: %s", id)
}

func errActionNotFound(id string) *Error {
	return newError(CodeActionNotFound, "Action not found: %s", id)
}

// errActionOfInterruptedTurn is ACTION_NOT_FOUND (the protocol's answer for an abandoned
// action, docs/protocol.md §7.2) for an action whose turn a newer start interrupted: the
// message says why it is gone, so an approver knows their answer came too late.
func errActionOfInterruptedTurn(id, by string) *Error {
	return newError(CodeActionNotFound, "Action not found: %s: the turn was interrupted by %s", id, by)
}

func errActionAlreadyResolved(id string) *Error {
	return newError(CodeActionAlreadyResolved, "Action already resolved: %s", id)
}

// providerError is what a provider sees when one of its calls is refused; the message is the
// protocol's and becomes the execution's error message if the provider lets it propagate.
func providerError(message string) *Error {
	return &Error{Code: CodeProviderError, Message: message}
}

// storeError maps a failed commit to what the caller sees.
func storeError(op string, err error) error {
	if errors.Is(err, store.ErrClosed) {
		return ErrClosed
	}
	if errors.Is(err, store.ErrConversationGone) {
		// A write into a conversation deleted meanwhile (a rename, a rule, a start racing the
		// delete): it is not found, as it would have been a moment later.
		return &Error{Code: CodeNotFound, Message: "Conversation not found", cause: err}
	}
	return internalError(op, err)
}
