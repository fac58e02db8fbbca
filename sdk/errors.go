package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Error is every non-2xx answer of the server. Code, Message and Details come from the
// response's Problem body; when the body is not a Problem (a plain-text 404 from a gateway, an
// HTML 502), Code is CodeHTTPError and Message says which status failed, as the TypeScript SDK
// does. Match a code with errors.Is(err, ErrNotFound) and friends.
type Error struct {
	StatusCode int
	Code       string
	Message    string
	// Details is set for CAPABILITY_UNSUPPORTED: {"providerId": …, "capabilities": […]}, and
	// for CONVERSATION_BUSY: {"conversationId": …, "executionIds": […]} (read it as a
	// *BusyError).
	Details api.JSONObject
	// RequestID is the server's or gateway's request id (X-Request-Id and similar headers), if
	// the response carried one; quote it when reporting a problem.
	RequestID string
	// Header is the response's header (for example Allow on a 405, Retry-After on a 429).
	Header http.Header
}

// CodeHTTPError is the Code of an Error whose body was not a Problem.
const CodeHTTPError = "HTTP_ERROR"

func (e *Error) Error() string {
	s := fmt.Sprintf("harness: %d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// Is reports whether e carries the protocol code of target, one of the Err* sentinels.
func (e *Error) Is(target error) bool {
	sentinel, known := sentinelByCode[e.Code]
	return known && sentinel == target
}

// One sentinel per protocol error code, for errors.Is. The *Error found with errors.As has the
// message, details and status.
var (
	ErrValidation            = errors.New("harness: VALIDATION_ERROR")
	ErrNotFound              = errors.New("harness: NOT_FOUND")
	ErrProviderNotFound      = errors.New("harness: PROVIDER_NOT_FOUND")
	ErrCapabilityUnsupported = errors.New("harness: CAPABILITY_UNSUPPORTED")
	ErrIdempotencyConflict   = errors.New("harness: IDEMPOTENCY_CONFLICT")
	ErrInvalidState          = errors.New("harness: INVALID_STATE")
	ErrActionNotFound        = errors.New("harness: ACTION_NOT_FOUND")
	ErrActionAlreadyResolved = errors.New("harness: ACTION_ALREADY_RESOLVED")
	ErrInternal              = errors.New("harness: INTERNAL_ERROR")
	ErrMethodNotAllowed      = errors.New("harness: METHOD_NOT_ALLOWED")
	// ErrUnauthenticated: tenancy is on and the request named no tenant (401).
	ErrUnauthenticated = errors.New("harness: UNAUTHENTICATED")
	// ErrRateLimited: the tenant has as many running executions as allowed (429, Retry-After).
	ErrRateLimited = errors.New("harness: RATE_LIMITED")
	// ErrBudgetExceeded: the tenant has spent one of its usage budgets (429; Retry-After is the
	// seconds until the budget's window ends). Not retried: the wait is hours, not seconds.
	ErrBudgetExceeded = errors.New("harness: BUDGET_EXCEEDED")
	// ErrConversationBusy: a start under the reject busy policy while another execution of
	// its conversation has not ended (409, harness-edge). errors.As with a *BusyError says
	// which executions.
	ErrConversationBusy = errors.New("harness: CONVERSATION_BUSY")
	// ErrHTTP matches an Error whose body was not a Problem (Code CodeHTTPError).
	ErrHTTP = errors.New("harness: " + CodeHTTPError)
)

var sentinelByCode = map[string]error{
	string(api.ErrorCodeVALIDATIONERROR):       ErrValidation,
	string(api.ErrorCodeNOTFOUND):              ErrNotFound,
	string(api.ErrorCodePROVIDERNOTFOUND):      ErrProviderNotFound,
	string(api.ErrorCodeCAPABILITYUNSUPPORTED): ErrCapabilityUnsupported,
	string(api.ErrorCodeIDEMPOTENCYCONFLICT):   ErrIdempotencyConflict,
	string(api.ErrorCodeINVALIDSTATE):          ErrInvalidState,
	string(api.ErrorCodeACTIONNOTFOUND):        ErrActionNotFound,
	string(api.ErrorCodeACTIONALREADYRESOLVED): ErrActionAlreadyResolved,
	string(api.ErrorCodeINTERNALERROR):         ErrInternal,
	string(api.ErrorCodeMETHODNOTALLOWED):      ErrMethodNotAllowed,
	string(api.ErrorCodeUNAUTHENTICATED):       ErrUnauthenticated,
	string(api.ErrorCodeRATELIMITED):           ErrRateLimited,
	string(api.ErrorCodeBUDGETEXCEEDED):        ErrBudgetExceeded,
	string(api.ErrorCodeCONVERSATIONBUSY):      ErrConversationBusy,
	CodeHTTPError:                              ErrHTTP,
}

// requestIDHeaders are the headers gateways and servers put their request id in, most common
// first.
var requestIDHeaders = []string{"X-Request-Id", "Request-Id", "X-Correlation-Id", "X-Amzn-Trace-Id"}

// newError builds the Error for a non-2xx response from its status, header and body.
func newError(status int, header http.Header, body []byte) *Error {
	e := &Error{StatusCode: status, Header: header}
	for _, name := range requestIDHeaders {
		if id := header.Get(name); id != "" {
			e.RequestID = id
			break
		}
	}
	var p api.Problem
	if json.Unmarshal(body, &p) == nil && p.Code != "" && p.Message != "" {
		e.Code, e.Message = p.Code, p.Message
		if p.Details != nil {
			e.Details = *p.Details
		}
		return e
	}
	e.Code = CodeHTTPError
	e.Message = fmt.Sprintf("HTTP request failed with status %d", status)
	return e
}

// errorFromResponse builds the Error for r, whose body has already been read into body.
func errorFromResponse(r *http.Response, body []byte) *Error {
	if r == nil {
		return &Error{Code: CodeHTTPError, Message: "HTTP request failed without a response"}
	}
	return newError(r.StatusCode, r.Header, body)
}

// BusyError is a start refused because its conversation is busy: the reject busy policy
// (harness-edge; docs/protocol.md, "Busy conversations"), while executions of the conversation
// have not ended. It is the *Error of that answer, read as what a chat service acts on: which
// executions to wait for, show, or cancel before trying again.
//
//	var busy *sdk.BusyError
//	if errors.As(err, &busy) {
//		log.Printf("%s is still answering (%v)", busy.ConversationID, busy.ExecutionIDs)
//	}
type BusyError struct {
	ConversationID string
	// ExecutionIDs are the executions that had not ended, in the order they were started.
	ExecutionIDs []string
	// Deleting: the conversation is being deleted (a DELETE with cancel sealed it) and takes no
	// new execution; retrying will not help, and it answers ErrNotFound once erased.
	Deleting bool
	// Answer is the server's answer (status, message, request id).
	Answer *Error
}

func (e *BusyError) Error() string { return e.Answer.Error() }

// Unwrap is the *Error of the answer, so errors.Is(err, ErrConversationBusy) holds too.
func (e *BusyError) Unwrap() error { return e.Answer }

// As lets errors.As find a *BusyError in the *Error of a CONVERSATION_BUSY answer.
func (e *Error) As(target any) bool {
	busy, ok := target.(**BusyError)
	if !ok || e.Code != string(api.ErrorCodeCONVERSATIONBUSY) {
		return false
	}
	var details api.ConversationBusyDetails
	if raw, err := json.Marshal(e.Details); err == nil {
		_ = json.Unmarshal(raw, &details) // a server that sent none leaves the fields empty
	}
	*busy = &BusyError{Answer: e, ConversationID: details.ConversationID, ExecutionIDs: details.ExecutionIds,
		Deleting: details.Deleting != nil && *details.Deleting}
	return true
}
