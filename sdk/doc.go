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
//		ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime",
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
// # Retries and timeouts
//
// Requests go through go-retryablehttp: connection errors, 408, 429 and 5xx except 501 are
// retried with jittered exponential backoff, honouring Retry-After up to a cap, within the
// call's context (see RetryPolicy and WithRetry; by default 4 tries, waits from 500 ms to 8 s).
// Two more failures of the network are retried the same way:
//
//   - A body cut short. Each try's answer is read whole inside the retried round trip, so a
//     connection that drops half-way through a 2xx body is one more failure of that try, not
//     an "unexpected EOF" for the caller.
//   - A silent answer. A try whose answer brings no header, or no further byte of its body, for
//     the stall timeout (WithStallTimeout, default 60 s) is abandoned as a dead connection. The
//     clock only counts silence: a slow answer that keeps coming is never cut.
//
// Retrying never duplicates work. Per call:
//
//   - Health, DescribeRuntime, ListCapabilities, GetConversation, GetExecution, ListArtifacts,
//     ListEvents: reads, retried after every failure above.
//   - StartExecution: retried like a read; it always sends an idempotency key (the same on
//     every try), so a retry answers the execution the first try started. Replayed tells
//     whether an earlier call with your key had started it.
//   - CancelExecution: retried like a read; cancelling is idempotent. The server answers once
//     the execution is final, after the provider's cleanup (at most its cancel timeout, 30 s
//     by default): keep the stall timeout above that.
//   - RespondToAction: retried like a read; a retry that meets ACTION_ALREADY_RESOLVED means an
//     earlier try was applied, and the call returns the execution's snapshot (read, and
//     retried, like GetExecution).
//   - CreateConversation: it has no idempotency key, so it is retried only when the server
//     certainly did not act (the connection could not be opened; 408, 429, 503), or certainly
//     did but the 2xx body with the new id was cut short. After an ambiguous failure (reset
//     connection, 500, 502, 504, a silent answer) the error is returned.
//
// No call has a timeout of its own beyond the stall timeout: the context bounds each call,
// its retries and their waits included. Leave the Timeout of an http.Client given to
// WithHTTPClient at zero, as it would also cut event streams.
//
// # Events
//
// Events returns an iterator over an execution's events that yields each event exactly once,
// in sequence order, and ends after the terminal event. It reads server-sent events with
// go-sse, reconnects after drops and server errors, resumes from the last sequence, drops
// duplicates and fills gaps from the JSON replay:
//
//	for event, err := range c.Events(ctx, exec.ID, 0) {
//		if err != nil { return err }
//		fmt.Println(event.Sequence, event.Type)
//	}
//
// An event's Data is typed by the event's Type, read with the accessors generated from
// harness.yaml (api.EventData): AsTextDeltaData for output.text.delta, AsActionRequest for
// action.required, AsActionRespondedData, AsArtifact, AsRunCompletedData, AsRunFailedData,
// AsRunCancelledData, AsRunQueuedData (run.queued and run.started), AsTextDoneData, and
// AsProviderEventData (the object as the provider sent it):
//
//	if event.Type == api.StandardEventTypeActionRequired {
//		action, err := event.Data.AsActionRequest()
//		…
//	}
//
// It counts on the server's heartbeats (a ": keep-alive" comment on an idle stream, every
// 15 s by default). A harness-edge server announces its interval on each stream (the
// Harness-Heartbeat-Ms header) and the client follows it; WithHeartbeatInterval overrides it,
// and a server that announces none is counted on for the default. A stream that
// brings no byte at all for three intervals is dead: the client drops it and reconnects. A
// stream that brings heartbeats but no new event for an interval makes the client check the
// JSON replay for events lost on the way, so that a lost action.required costs seconds, not
// the run. Events reconnects for as long as ctx lives; WithReconnectTimeout ends it with
// ErrNoProgress after a time in which it only reconnected.
//
// A finished stream gives its connection back: after the terminal event the iterator reads the
// answer to its end (normally the few bytes already on their way; at most 250 ms and 256 KiB)
// before it ends, so the connection returns to the HTTP client's pool and the next request,
// or the next execution's stream, reuses it instead of opening a new one (on TLS, a new
// handshake). To keep that, let the loop run to its end, or stop it at the terminal event:
//
//	for event, err := range c.Events(ctx, exec.ID, 0) {
//		if err != nil { return err }
//		…
//		if sdk.IsTerminalEvent(event.Type) { break } // the connection is still reused
//	}
//
// Stopping the loop before the terminal event closes the connection (the stream could go on
// for hours). A service that follows many executions at once should also give the client an
// http.Client (WithHTTPClient) whose transport keeps as many idle connections per host as it has
// concurrent calls: the default keeps GOMAXPROCS+1.
//
// WaitForTerminal waits for the final snapshot the same way. Run does everything in one call:
// start, follow, answer approvals with a handler, return the final execution and its output.
//
// # Chats: one conversation, message after message
//
// A chat service keeps one conversation per chat and starts the next execution in it for each
// message. NewConversation creates one with a busy policy (harness-edge): what a message means
// while the previous one is still being answered — api.BusyPolicyParallel (both run),
// BusyPolicyReject (the start fails with a *BusyError naming what is running),
// BusyPolicyEnqueue (it waits its turn; its snapshot's WaitingFor says for what) or
// BusyPolicyInterrupt (the running one is cancelled). A start may override it
// (StartExecutionRequest.BusyPolicy). ContinueConversation picks a chat up again by its id;
// the *Conversation it returns starts (Start, Run) and reads back (History, Unfinished) its
// turns:
//
//	chat, err := c.ContinueConversation(ctx, chatID)
//	res, err := chat.Run(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: msg}, handlers)
//	var busy *sdk.BusyError
//	if errors.As(err, &busy) { … } // reject: busy.ExecutionIDs are still answering
//
// # Logging
//
// The client is silent unless given a logger with WithLogger; it then logs retries and
// reconnects at debug level.
//
// # Traces
//
// Every request carries the trace context of the ctx it is made with (W3C traceparent and
// tracestate, and baggage; the program's propagator when it set one with
// otel.SetTextMapPropagator), event stream reconnects and replay reads included, so the
// server's spans join the caller's trace. A reconnect (harness.stream.reconnect) and a gap
// filled from the replay (harness.stream.gap_filled) are events on the caller's span. The SDK
// uses OpenTelemetry's API only: the program's tracer provider decides what is recorded.
package sdk
