package sdk

import (
	"context"
	"slices"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// A chat on top of the protocol: one conversation, one execution per message. What a Go chat
// service needs beyond the operations: to say what a second message means while the first is
// still being answered (a busy policy, harness-edge), to continue a conversation it created
// earlier (after its own restart, or on another replica), and to read the conversation back.

// Conversation is a conversation a service continues message after message: each Start or Run
// is the next turn, an execution in it. Its busy policy (Conversation.BusyPolicy, nil when it
// has none) says what a start means while an earlier turn is still running; a start may
// override it (api.StartExecutionRequest.BusyPolicy). Safe for concurrent use.
type Conversation struct {
	api.Conversation
	client *Client
}

// Conversation is a handle on conv, a conversation CreateConversation or GetConversation
// returned; it makes no request.
func (c *Client) Conversation(conv api.Conversation) *Conversation {
	return &Conversation{Conversation: conv, client: c}
}

// NewConversation creates a conversation (CreateConversation) whose starts follow policy, and
// returns its handle. ErrValidation for a policy the server does not know. A server without
// the busy-policy extension creates the conversation all the same and leaves its BusyPolicy
// nil: check it when the policy matters.
func (c *Client) NewConversation(ctx context.Context, policy api.BusyPolicy, metadata api.JSONObject) (*Conversation, error) {
	req := api.CreateConversationRequest{BusyPolicy: &policy}
	if metadata != nil {
		req.Metadata = &metadata
	}
	conv, err := c.CreateConversation(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.Conversation(conv), nil
}

// ContinueConversation reads conversation id (GetConversation: ErrNotFound when it is
// unknown, or another tenant's) and returns its handle: how a service picks up a chat it
// created before, by the id it kept.
func (c *Client) ContinueConversation(ctx context.Context, id string) (*Conversation, error) {
	conv, err := c.GetConversation(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.Conversation(conv), nil
}

// Start starts the next turn: req in this conversation (its ConversationID is set), as
// StartExecution does, retries and idempotency included. Under the reject policy a busy
// conversation answers a *BusyError; under enqueue or interrupt the execution is queued, its
// WaitingFor naming the turns it waits for.
func (cv *Conversation) Start(ctx context.Context, req api.StartExecutionRequest, opts ...StartOption) (api.Execution, error) {
	req.ConversationID = cv.ID
	return cv.client.StartExecution(ctx, req, opts...)
}

// Run is Client.Run for the next turn of this conversation: it starts req here, follows it
// (through its wait for a turn, when it has one) and returns its outcome.
func (cv *Conversation) Run(ctx context.Context, req api.StartExecutionRequest, handlers RunHandlers) (RunResult, error) {
	req.ConversationID = cv.ID
	return cv.client.Run(ctx, req, handlers)
}

// History is every execution of the conversation, oldest first: its turns in the order they
// were started, each as its current snapshot (GET /v1/conversations/{id}/executions, every
// page; a harness-edge extension).
func (cv *Conversation) History(ctx context.Context) ([]api.Execution, error) {
	var turns []api.Execution
	for exec, err := range cv.client.AllConversationExecutions(ctx, cv.ID, nil) {
		if err != nil {
			return nil, err
		}
		turns = append(turns, exec)
	}
	slices.Reverse(turns) // the listing is newest first
	return turns, nil
}

// Unfinished is the conversation's executions that have not ended, oldest first: what a start
// under reject would be refused for, and what one under enqueue would wait for.
func (cv *Conversation) Unfinished(ctx context.Context) ([]api.Execution, error) {
	states := api.ListState{api.ExecutionStateQueued, api.ExecutionStateStarting, api.ExecutionStateRunning,
		api.ExecutionStateAwaitingApproval, api.ExecutionStateAwaitingInput, api.ExecutionStateCancelling}
	var out []api.Execution
	for exec, err := range cv.client.AllConversationExecutions(ctx, cv.ID, &api.ListConversationExecutionsParams{State: &states}) {
		if err != nil {
			return nil, err
		}
		out = append(out, exec)
	}
	slices.Reverse(out)
	return out, nil
}
