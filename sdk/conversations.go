package sdk

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// CreateConversation creates a conversation (POST /v1/conversations); req.Metadata is copied
// onto it.
//
// Unlike the other operations, it is retried only when the server certainly did not act on the
// request (the connection could not be opened, or the answer was 408, 429 or 503): creating a
// conversation has no idempotency key, so repeating a request whose answer was lost could
// create a second, empty conversation. After an ambiguous failure (connection reset, 500, 502,
// 504, an answer silent for the stall timeout) the error is returned and the caller decides;
// an unused conversation costs nothing but storage. One failure is not ambiguous: a 201 whose
// body was cut short. The conversation was created but its id is lost, so the call tries
// again, and the lost conversation stays empty.
func (c *Client) CreateConversation(ctx context.Context, req api.CreateConversationRequest) (api.Conversation, error) {
	resp, err := c.api.CreateConversationWithResponse(withRetryMode(ctx, retryUnprocessed), req)
	if err != nil {
		return api.Conversation{}, transportError("createConversation", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON201)
}

// GetConversation reads a conversation (GET /v1/conversations/{id}); ErrNotFound if unknown.
// It is retried like GetExecution.
func (c *Client) GetConversation(ctx context.Context, id string) (api.Conversation, error) {
	resp, err := c.api.GetConversationWithResponse(ctx, id)
	if err != nil {
		return api.Conversation{}, transportError("getConversation", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}
