// Package sdk is the Go client of the Harness Runtime API: start AI agent executions on a
// provider, follow their events, answer their approval and input requests, list their artifacts,
// cancel them.
//
// It is a thin hand-written layer over the client generated from openapi/harness.yaml (package
// api): every method takes and returns the generated wire types (api.Execution,
// api.RuntimeEvent, …). What the layer adds is that the network stays out of sight.
//
// # Calls
//
// New returns a Client; it has one method per operation, context first:
//
//	c, err := sdk.New("http://127.0.0.1:4310", sdk.WithBearerToken(token))
//	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
//	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{
//		ConversationId: conv.Id, ProviderId: "mock", Input: "hello runtime",
//	})
//
// # Errors
//
// Every answer other than 2xx is an *Error with the HTTP status, the protocol code, the message,
// the details and the request id. Test the code with errors.Is against the sentinels:
//
//	if errors.Is(err, sdk.ErrNotFound) { … }
//	var e *sdk.Error
//	if errors.As(err, &e) { log.Print(e.StatusCode, e.Code, e.Message, e.RequestID) }
//
// # Retries
//
// Requests go through go-retryablehttp: connection errors, 408, 429 and 5xx except 501 are
// retried with jittered exponential backoff, honouring Retry-After up to a cap, within the
// call's context (see RetryPolicy and WithRetry). Retrying never duplicates work:
// StartExecution always sends an idempotency key, cancelling is idempotent, RespondToAction
// treats ACTION_ALREADY_RESOLVED after its own retry as the success it was, and
// CreateConversation, which has no key, is only retried when the server certainly did not
// process it.
//
// # Events
//
// Events returns an iterator over an execution's events that yields each event exactly once,
// in sequence order, and ends after the terminal event. It reads server-sent events with
// go-sse, reconnects after drops and server errors, resumes from the last sequence, drops
// duplicates and fills gaps from the JSON replay:
//
//	for event, err := range c.Events(ctx, exec.Id, 0) {
//		if err != nil { return err }
//		fmt.Println(event.Sequence, event.Type)
//	}
//
// WaitForTerminal waits for the final snapshot the same way. Run does everything in one call:
// start, follow, answer approvals with a handler, return the final execution and its output.
//
// # Logging
//
// The client is silent unless given a logger with WithLogger; it then logs retries and
// reconnects at debug level.
package sdk
