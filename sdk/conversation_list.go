package sdk

import (
	"context"
	"iter"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversations listing and update are harness-edge extensions (docs/protocol.md §15,
// "Conversations"): a server that implements only the reference answers them with a 405.

// ListConversations returns one page of the caller's conversations, most recently active
// first (GET /v1/conversations): each with its title, metadata, times, number of executions
// and its newest execution's state and previews. params may be nil; params.MetadataKey (and
// MetadataValue), ActiveAfter and ActiveBefore filter; when more remain, the list's
// NextCursor is set: pass it as params.After. AllConversations walks every page for you.
func (c *Client) ListConversations(ctx context.Context, params *api.ListConversationsParams) (api.ConversationList, error) {
	resp, err := c.api.ListConversationsWithResponse(ctx, params)
	if err != nil {
		return api.ConversationList{}, transportError("listConversations", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// AllConversations yields every conversation ListConversations selects, most recently active
// first, fetching page after page as the loop goes on (params.Limit is the page size). A
// conversation that becomes active while it runs moves ahead of where it is and is not
// yielded again (nor, if it was not yet yielded, at all): start again for a fresh view. An
// error is yielded once and ends the sequence.
//
//	for conv, err := range client.AllConversations(ctx, nil) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(conv.ID, conv.LastActivityAt)
//	}
func (c *Client) AllConversations(ctx context.Context, params *api.ListConversationsParams) iter.Seq2[api.ConversationSummary, error] {
	var p api.ListConversationsParams
	if params != nil {
		p = *params
	}
	return allPages(func(after *string) ([]api.ConversationSummary, *string, error) {
		p.After = after
		list, err := c.ListConversations(ctx, &p)
		return list.Conversations, list.NextCursor, err
	}, p.After)
}

// UpdateConversation changes a conversation's title and metadata (PATCH
// /v1/conversations/{id}, a JSON merge patch): a nil field is left as it is; req.Title ""
// removes the title; req.Metadata is merged key by key, a key set to nil is removed. It
// returns the conversation as updated; ErrNotFound for an unknown id or another tenant's. A
// merge patch applied twice gives the same conversation, so it is retried like a read.
func (c *Client) UpdateConversation(ctx context.Context, id string, req api.UpdateConversationRequest) (api.Conversation, error) {
	resp, err := c.api.UpdateConversationWithResponse(ctx, id, req)
	if err != nil {
		return api.Conversation{}, transportError("updateConversation", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// RenameConversation sets the conversation's title ("" removes it); see UpdateConversation.
func (c *Client) RenameConversation(ctx context.Context, id, title string) (api.Conversation, error) {
	return c.UpdateConversation(ctx, id, api.UpdateConversationRequest{Title: &title})
}

// DeleteOptions are DeleteConversation's options.
type DeleteOptions struct {
	// CancelRunning cancels the conversation's unfinished executions first (reason
	// "conversation deleted") and deletes it once they ended. Without it a conversation with
	// an execution that has not ended is refused: ErrConversationBusy, whose *BusyError names
	// them.
	CancelRunning bool
}

// DeleteConversation erases a conversation with everything of it, on every node (DELETE
// /v1/conversations/{id}, an extension): its executions, events, artifacts, actions,
// standing rules and what providers kept for it. It returns the tombstone (when, and how many
// executions went with it); ErrNotFound for an unknown id, another tenant's, or one already
// deleted. The id is never used again. It is retried only when the server certainly did not
// act on it: a repeat of a deletion that was applied would answer ErrNotFound.
func (c *Client) DeleteConversation(ctx context.Context, id string, opts DeleteOptions) (api.ConversationDeletion, error) {
	var params api.DeleteConversationParams
	if opts.CancelRunning {
		yes := api.DeleteConversationParamsCancelTrue
		params.Cancel = &yes
	}
	resp, err := c.api.DeleteConversationWithResponse(withRetryMode(ctx, retryUnprocessed), id, &params)
	if err != nil {
		return api.ConversationDeletion{}, transportError("deleteConversation", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}
