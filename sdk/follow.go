package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// FollowOptions select what a conversation's or the tenant's stream sends, and where it starts.
type FollowOptions struct {
	// After is a cursor the stream gave before (StreamEvent.Cursor, or a page's NextCursor):
	// the stream goes on exactly after it. "" starts a conversation's stream at its beginning
	// and the tenant's stream now; "0" starts either at the beginning of what the server keeps.
	After string
	// Types keeps only events of these types; Lifecycle only run.* and action.* events (starts,
	// approvals, terminals); Providers only events of executions of these providers.
	Types     []api.StandardEventType
	Lifecycle bool
	Providers []string
	// Conversation narrows the tenant's stream to one conversation (FollowTenant only).
	Conversation string
}

// StreamEvent is one message of a conversation's or the tenant's stream.
type StreamEvent struct {
	// Cursor is where the stream stands after this message: hand it to FollowOptions.After
	// to go on exactly from here later (store it with what you did with the event).
	Cursor string
	// Event is the execution's event, exactly as its own stream sends it.
	Event api.RuntimeEvent
	// Gap, when set, is not an event: the cursor the stream was resumed from was older than
	// what the server keeps (its retention), events between it and Gap.ResumeAfter are gone,
	// and the stream goes on after Gap.ResumeAfter. Event is empty then.
	Gap *api.StreamGap
	// Deleted, when set, is not an event either: the conversation Deleted.ConversationID was
	// deleted (DeleteConversation), and its events with it — this message stands where they
	// were, so a reader resuming from before them learns why they are gone. Drop what you kept
	// of that conversation. A conversation's stream ends with it (FollowConversation's
	// sequence ends, without an error); the tenant's goes on. Event is empty then.
	Deleted *api.ConversationDeleted
}

// FollowConversation streams every event of every execution of the conversation, in the order
// the server committed them, each exactly once, for as long as ctx lives: a conversation has no
// end, so the sequence ends only with ctx, when the loop stops, or with an error retrying cannot
// fix (ErrNotFound for an unknown conversation, a ValidationError for a cursor of another
// stream). Cuts, stalls and server restarts stay out of sight as on Events: it reconnects with
// backoff and resumes from the cursor of the last message it yielded, drops a connection that
// brings no byte for three heartbeat intervals, and drops duplicates by (executionId,
// sequence). A message lost on the way (an execution's next sequence skipped) makes it
// reconnect from the cursor of that execution's last message, which the server answers from
// exactly there: the lost message is yielded then, after messages of other executions that
// followed it on the server (its Cursor is earlier than theirs), and those are not repeated.
func (c *Client) FollowConversation(ctx context.Context, conversationID string, opts FollowOptions) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		f := c.newFollow(ctx, opts, yield, func(cursor string) (*http.Request, error) {
			return api.NewListOrStreamConversationEventsRequest(c.server, conversationID, &api.ListOrStreamConversationEventsParams{
				After: nonEmpty(cursor), LastEventID: nonEmpty(cursor),
				Type: joined(opts.Types), Lifecycle: trueOrNil(opts.Lifecycle), Provider: joined(opts.Providers),
			})
		})
		f.what = "conversation " + conversationID
		f.conversation = true
		f.run()
	}
}

// FollowTenant streams every event the caller's tenant may see (with tenancy off, every
// event), as FollowConversation does for one conversation. Without FollowOptions.After it
// starts now: it asks the server for the cursor of now first, so a cut before the first event
// loses nothing either.
func (c *Client) FollowTenant(ctx context.Context, opts FollowOptions) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		build := func(cursor string) (*http.Request, error) {
			return api.NewListOrStreamTenantEventsRequest(c.server, &api.ListOrStreamTenantEventsParams{
				After: nonEmpty(cursor), LastEventID: nonEmpty(cursor),
				Type: joined(opts.Types), Lifecycle: trueOrNil(opts.Lifecycle), Provider: joined(opts.Providers),
				Conversation: nonEmpty(opts.Conversation),
			})
		}
		f := c.newFollow(ctx, opts, yield, build)
		f.what = "the tenant's events"
		if f.cursor == "" {
			if !f.cursorOfNow() {
				return
			}
		}
		f.run()
	}
}

// ReplayConversation returns one page of a conversation's events after the cursor (FollowOptions
// select them as for a stream), at most limit (0: the server's page).
func (c *Client) ReplayConversation(ctx context.Context, conversationID string, opts FollowOptions, limit int) (api.StreamEventList, error) {
	params := &api.ListOrStreamConversationEventsParams{After: nonEmpty(opts.After), Type: joined(opts.Types),
		Lifecycle: trueOrNil(opts.Lifecycle), Provider: joined(opts.Providers)}
	if limit > 0 {
		params.Limit = &limit
	}
	resp, err := c.api.ListOrStreamConversationEventsWithResponse(ctx, conversationID, params)
	if err != nil {
		return api.StreamEventList{}, transportError("listOrStreamConversationEvents", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// ReplayTenant returns one page of the tenant's events after the cursor; without one, no
// events and the cursor of now.
func (c *Client) ReplayTenant(ctx context.Context, opts FollowOptions, limit int) (api.StreamEventList, error) {
	params := &api.ListOrStreamTenantEventsParams{After: nonEmpty(opts.After), Type: joined(opts.Types),
		Lifecycle: trueOrNil(opts.Lifecycle), Provider: joined(opts.Providers), Conversation: nonEmpty(opts.Conversation)}
	if limit > 0 {
		params.Limit = &limit
	}
	resp, err := c.api.ListOrStreamTenantEventsWithResponse(ctx, params)
	if err != nil {
		return api.StreamEventList{}, transportError("listOrStreamTenantEvents", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// follow is one iteration of FollowConversation or FollowTenant. As in eventStream, its state
// is owned by the iterating goroutine (see sseBridge): yield is only called on the caller's
// goroutine and nothing is buffered.
type follow struct {
	client  *Client
	ctx     context.Context
	what    string // for errors and logs
	request func(cursor string) (*http.Request, error)
	opts    FollowOptions
	yield   func(StreamEvent, error) bool

	cursor string
	done   bool
	// last is the last sequence yielded per execution (dropping duplicates, noticing a lost
	// message); finished keeps the executions whose terminal event was yielded, so their
	// entries can go and the map stays as small as the executions in flight.
	last     map[string]int64
	finished map[string]bool
	// lastAt is the cursor of the last message yielded per execution: where to resume when
	// one of its messages was lost. Messages of other executions may have been yielded after
	// the lost one (the loss shows only at the execution's next message), so the stream's own
	// cursor is already past it; resuming from lastAt brings it, and the messages yielded since
	// come again and are dropped as duplicates.
	lastAt map[string]string
	// contiguous: no filter on types, so an execution's sequences must follow each other.
	contiguous bool
	// conversation: a conversation's stream, which ends with its conversation.deleted.
	conversation bool

	stopConnection context.CancelFunc
	lost           bool // the current connection lost a message: what else it brings is ignored
	open           bool
	moved          bool // the current connection yielded something
	openedAt       time.Time
	heartbeat      time.Duration
}

func (c *Client) newFollow(ctx context.Context, opts FollowOptions, yield func(StreamEvent, error) bool, request func(string) (*http.Request, error)) *follow {
	return &follow{client: c, ctx: ctx, request: request, opts: opts, yield: yield, cursor: opts.After,
		last: map[string]int64{}, lastAt: map[string]string{}, finished: map[string]bool{}, contiguous: len(opts.Types) == 0 && !opts.Lifecycle}
}

// cursorOfNow asks the tenant's JSON page for the cursor of now, retrying what can be retried.
func (f *follow) cursorOfNow() bool {
	for attempt := 0; ; attempt++ {
		page, err := f.client.ReplayTenant(f.ctx, FollowOptions{Types: f.opts.Types, Lifecycle: f.opts.Lifecycle,
			Providers: f.opts.Providers, Conversation: f.opts.Conversation}, 1)
		if err == nil {
			f.cursor = page.NextCursor
			return true
		}
		var apiErr *Error
		if f.ctx.Err() != nil || errors.As(err, &apiErr) && !retryableStatus(apiErr.StatusCode) {
			f.fail(f.errorOr(err))
			return false
		}
		if !sleep(f.ctx, f.client.retry.backoff(attempt, nil)) {
			f.fail(f.ctx.Err())
			return false
		}
	}
}

func (f *follow) errorOr(err error) error {
	if f.ctx.Err() != nil {
		return f.ctx.Err()
	}
	return err
}

// run is the reconnect loop: each connection starts from the cursor of the last message
// yielded.
func (f *follow) run() {
	for failures := 0; ; failures++ {
		err := f.connect()
		if f.done {
			return
		}
		if f.ctx.Err() != nil {
			f.fail(f.ctx.Err())
			return
		}
		healthy := f.moved || f.open && time.Since(f.openedAt) >= f.quietAfter()
		var apiErr *Error
		var connErr *sse.ConnectionError
		var lastResponse *http.Response
		switch {
		case errors.As(err, &apiErr) && retryableStatus(apiErr.StatusCode):
			lastResponse = &http.Response{StatusCode: apiErr.StatusCode, Header: apiErr.Header}
		case errors.As(err, &apiErr):
			f.fail(apiErr)
			return
		case errors.Is(err, errNotAnEventStream) || err != nil && !errors.As(err, &connErr) && !errors.Is(err, errLostMessage):
			f.fail(fmt.Errorf("harness: stream of %s: %w", f.what, err))
			return
		}
		f.open, f.moved = false, false
		if healthy {
			failures = 0
		}
		wait := f.client.reconnectWait(failures, lastResponse)
		f.client.log.Debug("harness: reconnecting stream", "stream", f.what, "after", f.cursor, "wait", wait, "reason", err)
		if !sleep(f.ctx, wait) {
			f.fail(f.ctx.Err())
			return
		}
	}
}

// errLostMessage ends a connection that skipped a message (an execution's sequence jumped):
// the reconnect from the cursor brings it.
var errLostMessage = errors.New("a message was lost on the way")

func (f *follow) quietAfter() time.Duration {
	if f.heartbeat > 0 {
		return f.heartbeat
	}
	return f.client.quietAfter
}

// connect runs one go-sse Connection from the cursor until it ends.
func (f *follow) connect() error {
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	f.lost = false
	f.stopConnection = cancel
	req, err := f.request(f.cursor)
	if err != nil {
		return err
	}
	req = req.WithContext(ctx)
	if err := f.client.addHeaders(ctx, req); err != nil {
		return err
	}
	err = sseBridge{transport: f.client.http.Transport, validate: f.validate, message: f.onMessage}.connect(ctx, req)
	if f.lost && !f.done {
		return errLostMessage
	}
	return err
}

func (f *follow) validate(r *http.Response) error {
	if r.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		return errorFromResponse(r, body)
	}
	if err := sse.DefaultValidator(r); err != nil {
		return fmt.Errorf("%w: %w", errNotAnEventStream, err)
	}
	f.open, f.openedAt = true, time.Now()
	if h, ok := advertisedHeartbeat(r.Header); ok {
		f.heartbeat = h
	}
	return nil
}

// onMessage yields the message's event, unless it is a duplicate; a lost message before it
// ends the connection (the reconnect from the cursor brings both).
func (f *follow) onMessage(m sse.Event) {
	if f.done || f.lost || m.Data == "" {
		return // (a message go-sse had read before the connection was stopped)
	}
	if m.Type == string(api.StreamGapTypeStreamGap) {
		var gap api.StreamGap
		if err := json.Unmarshal([]byte(m.Data), &gap); err != nil {
			f.fail(fmt.Errorf("harness: stream of %s: undecodable stream.gap: %w", f.what, err))
			return
		}
		f.deliver(StreamEvent{Cursor: m.LastEventID, Gap: &gap})
		return
	}
	if m.Type == string(api.ConversationDeletedTypeConversationDeleted) {
		var deleted api.ConversationDeleted
		if err := json.Unmarshal([]byte(m.Data), &deleted); err != nil {
			f.fail(fmt.Errorf("harness: stream of %s: undecodable conversation.deleted: %w", f.what, err))
			return
		}
		f.deliver(StreamEvent{Cursor: m.LastEventID, Deleted: &deleted})
		if f.conversation && !f.done {
			f.finish() // the server ends it too: a reconnect would only find the conversation gone
		}
		return
	}
	var e api.RuntimeEvent
	if err := json.Unmarshal([]byte(m.Data), &e); err != nil {
		f.fail(fmt.Errorf("harness: stream of %s: undecodable event after %q: %w", f.what, f.cursor, err))
		return
	}
	last, known := f.last[e.ExecutionID]
	switch {
	case f.finished[e.ExecutionID] || known && e.Sequence <= last:
		return // a duplicate
	case f.contiguous && known && e.Sequence > last+1:
		// Lost on the way: reconnect from the cursor of the execution's last message.
		f.lost = true
		f.cursor = f.lastAt[e.ExecutionID]
		f.stopConnection()
		return
	}
	f.deliver(StreamEvent{Cursor: m.LastEventID, Event: e})
	if IsTerminalEvent(e.Type) {
		delete(f.last, e.ExecutionID)
		delete(f.lastAt, e.ExecutionID)
		f.finished[e.ExecutionID] = true
		if len(f.finished) > maxRememberedFinished {
			clear(f.finished) // a duplicate that old cannot come: the server resumes from cursors
		}
	} else {
		f.last[e.ExecutionID] = e.Sequence
		f.lastAt[e.ExecutionID] = m.LastEventID
	}
}

// maxRememberedFinished bounds the finished executions a long follow remembers.
const maxRememberedFinished = 4096

func (f *follow) deliver(e StreamEvent) {
	f.moved = true
	more := f.yield(e, nil)
	f.cursor = e.Cursor
	if !more {
		f.finish()
	}
}

func (f *follow) finish() {
	f.done = true
	if f.stopConnection != nil {
		f.stopConnection()
	}
}

func (f *follow) fail(err error) {
	if f.done {
		return
	}
	f.finish()
	f.yield(StreamEvent{}, err)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func trueOrNil(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

func joined[T ~string](items []T) *string {
	if len(items) == 0 {
		return nil
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = string(it)
	}
	s := strings.Join(parts, ",")
	return &s
}
