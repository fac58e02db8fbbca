package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Start and stream in one request (Run).
//
// harness-edge servers answer a start that asks for text/event-stream with the execution's
// event stream from sequence 1, the id in the header Harness-Execution-Id (see startExecution in
// openapi/harness.yaml). Other servers, the reference among them, answer the usual 202 snapshot.
// Run asks with `Accept: text/event-stream, application/json` and takes either answer: a stream
// is read like any other, a 202 is followed through the events operation. So Run costs one
// request per execution where the server can, and is right everywhere.
//
// The stream is an eventStream (stream.go) whose first connection is the start: everything
// Events guarantees holds from the first event (exactly once, in order, gaps filled, quiet and
// dead streams checked). Before the id is known, the start is retried by the HTTP layer like
// StartExecution's, with the same body and so the same idempotency key: a try whose answer was
// lost is answered by the same execution, streamed again from sequence 1, and the stream drops
// what it delivered already. Once the id is known, a cut stream resumes from its cursor through
// the events operation, never through another start.
//
// After the terminal event the stream is not cut but read to its end (for at most drainWait),
// like every stream (drain.go): the answer's trailer Harness-Execution is then the final
// snapshot, which Run need not ask for. It is used only when it names this execution in a
// terminal state; otherwise, or when the trailer is missing, Run reads the snapshot as before.

// startStreamAccept asks for the stream and takes the usual 202 too.
const startStreamAccept = "text/event-stream, application/json"

// executionIDHeader names the execution of a streamed start.
const executionIDHeader = "Harness-Execution-Id"

// maxSnapshotBytes bounds the 202 body read on a stream's connection.
const maxSnapshotBytes = 4 << 20

// errStartedWithoutStream is what the validator reports for a 202: the execution started, and
// the stream goes on through the events operation.
var errStartedWithoutStream = errors.New("harness: the server started the execution without streaming it")

// finalSnapshotTrailer is the trailer in which a harness-edge server ends a streamed start whose
// execution ended: the final snapshot, as GET /v1/executions/{id} answers it. Run uses it
// instead of asking for the snapshot.
const finalSnapshotTrailer = "Harness-Execution"

// startCall is the start that opens a stream begun by Run.
type startCall struct {
	req    api.StartExecutionRequest // with its idempotency key, the same for every try
	ownKey bool                      // the key is the caller's (see StartExecution's Replayed)
	// exec is the snapshot of a 202 answer, or only the id (and the request's fields) after a
	// streamed one, which carries no snapshot.
	exec     api.Execution
	replayed bool
	// final is the final snapshot the streamed start's trailer carried, if it did.
	final *api.Execution
}

func newStartCall(req api.StartExecutionRequest) *startCall {
	start := &startCall{req: req, ownKey: req.IdempotencyKey != nil}
	if !start.ownKey {
		start.req.IdempotencyKey = ptr(newIdempotencyKey())
	}
	return start
}

// startAndFollow starts the execution and streams its events, each once and in order, like
// Events from 0. An error before the execution is known is the start's (an *Error for a
// refusal, as from StartExecution); after that, errors are those of Events.
func (c *Client) startAndFollow(ctx context.Context, start *startCall) iter.Seq2[api.RuntimeEvent, error] {
	return func(yield func(api.RuntimeEvent, error) bool) {
		ctx, progress := c.watchProgress(ctx)
		defer progress.stop()
		s := &eventStream{client: c, ctx: ctx, start: start, yield: yield, progress: progress}
		s.run()
	}
}

// starting reports whether the stream's first connection is still the start: the execution is
// not known yet.
func (s *eventStream) starting() bool {
	return s.start != nil && s.executionID == ""
}

// acceptBoth sends its requests with startStreamAccept: the start's HTTP client. go-sse sets
// Accept to text/event-stream alone on every request it sends.
type acceptBoth struct{ next http.RoundTripper }

func (t acceptBoth) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	req.Header.Set("Accept", startStreamAccept)
	return t.next.RoundTrip(req)
}

// validateStart is the validator of the start: a 200 stream names its execution and is read as
// any stream; a 202 is the execution without a stream; anything else is the start's error.
func (s *eventStream) validateStart(r *http.Response) error {
	switch {
	case r.StatusCode == http.StatusOK:
		id := r.Header.Get(executionIDHeader)
		if id == "" {
			return fmt.Errorf("%w: the start answered 200 without %s", errNotAnEventStream, executionIDHeader)
		}
		s.started(api.Execution{ID: id, ConversationID: s.start.req.ConversationID, ProviderID: s.start.req.ProviderID},
			r.Header.Get(idempotentReplayedHeader) == "true")
		if err := s.validate(r); err != nil {
			return err
		}
		s.startResponse = r
		return nil
	case r.StatusCode == http.StatusAccepted:
		exec, replayed, err := s.snapshotOf(r)
		if err != nil {
			return err
		}
		s.started(exec, replayed)
		return errStartedWithoutStream
	case r.StatusCode/100 == 2:
		return fmt.Errorf("harness: startExecution: unexpected answer %s with Content-Type %q", r.Status, r.Header.Get("Content-Type"))
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	return errorFromResponse(r, body)
}

// snapshotOf reads the execution a 202 answered with. The HTTP layer does not read a stream
// request's answer whole, so a body cut short is seen here: the start is then asked again, with
// its key, by StartExecution, whose retries read answers whole; the key makes it the same
// execution.
// It returns the snapshot and whether the answer was marked Idempotent-Replayed.
func (s *eventStream) snapshotOf(r *http.Response) (api.Execution, bool, error) {
	var exec api.Execution
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSnapshotBytes))
	if err == nil {
		err = json.Unmarshal(body, &exec)
	}
	if err == nil && exec.ID != "" {
		return exec, r.Header.Get(idempotentReplayedHeader) == "true", nil
	}
	s.client.log.Debug("harness: start answered 202 with an unreadable snapshot; asking again with the same key", "error", err)
	var replayed bool // the request carries a key, so this is the header's word
	exec, err = s.client.StartExecution(s.ctx, s.start.req, Replayed(&replayed))
	return exec, replayed, err
}

// started records the execution the start answered with.
func (s *eventStream) started(exec api.Execution, replayedHeader bool) {
	s.executionID = exec.ID
	s.start.exec = exec
	// As in StartExecution: a key this call generated can only have been used by its own tries.
	s.start.replayed = s.start.ownKey && replayedHeader
}

// startError is what ends a stream whose start failed: the server's refusal (*Error, after the
// HTTP layer's retries where retrying could help), or what kept the start from being sent.
func startError(err error) error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return transportError("startExecution", err)
}

// readFinalSnapshot keeps the trailer's snapshot of the drained start, if it is the final
// snapshot of this execution. Anything else is ignored: Run then asks for the snapshot.
func (s *eventStream) readFinalSnapshot() {
	raw := s.startResponse.Trailer.Get(finalSnapshotTrailer)
	if raw == "" {
		return
	}
	var final api.Execution
	if err := json.Unmarshal([]byte(raw), &final); err != nil || final.ID != s.executionID || !IsTerminalState(final.State) {
		s.client.log.Debug("harness: ignoring the final snapshot trailer", "execution", s.executionID, "error", err)
		return
	}
	s.start.final = &final
}
