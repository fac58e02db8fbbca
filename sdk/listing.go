package sdk

import (
	"context"
	"iter"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Listing is a harness-edge extension: a server that implements only the reference answers
// these calls with ErrNotFound (or a 405).

// ListExecutions returns one page of executions, newest first (GET /v1/executions): at most
// params.Limit of them (default 50, at most 200), in the states of params.State when set
// (any of them). When more remain, the list's NextCursor is set: pass it as params.After for
// the next page. params may be nil. AllExecutions walks every page for you.
func (c *Client) ListExecutions(ctx context.Context, params *api.ListExecutionsParams) (api.ExecutionList, error) {
	resp, err := c.api.ListExecutionsWithResponse(ctx, params)
	if err != nil {
		return api.ExecutionList{}, transportError("listExecutions", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// ListConversationExecutions is ListExecutions for one conversation
// (GET /v1/conversations/{id}/executions); ErrNotFound when the conversation does not exist.
func (c *Client) ListConversationExecutions(ctx context.Context, conversationID string, params *api.ListConversationExecutionsParams) (api.ExecutionList, error) {
	resp, err := c.api.ListConversationExecutionsWithResponse(ctx, conversationID, params)
	if err != nil {
		return api.ExecutionList{}, transportError("listConversationExecutions", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// AllExecutions yields every execution ListExecutions selects, newest first, fetching page
// after page as the loop goes on (params.Limit is the page size; params.After a place to start
// from). Executions created while it runs are newer than where it is, so they are not
// yielded; none that existed when it started is skipped or yielded twice. An error is yielded
// once and ends the sequence. Stopping the loop early fetches nothing more.
//
//	for exec, err := range client.AllExecutions(ctx, &api.ListExecutionsParams{State: &states}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(exec.ID, exec.State)
//	}
func (c *Client) AllExecutions(ctx context.Context, params *api.ListExecutionsParams) iter.Seq2[api.Execution, error] {
	var p api.ListExecutionsParams
	if params != nil {
		p = *params
	}
	return allPages(func(after *string) ([]api.Execution, *string, error) {
		p.After = after
		list, err := c.ListExecutions(ctx, &p)
		return list.Executions, list.NextCursor, err
	}, p.After)
}

// AllConversationExecutions is AllExecutions for one conversation.
func (c *Client) AllConversationExecutions(ctx context.Context, conversationID string, params *api.ListConversationExecutionsParams) iter.Seq2[api.Execution, error] {
	var p api.ListConversationExecutionsParams
	if params != nil {
		p = *params
	}
	return allPages(func(after *string) ([]api.Execution, *string, error) {
		p.After = after
		list, err := c.ListConversationExecutions(ctx, conversationID, &p)
		return list.Executions, list.NextCursor, err
	}, p.After)
}

// allPages follows nextCursor from the page after `after` until a page has none, yielding
// each page's items.
func allPages[T any](page func(after *string) (items []T, next *string, err error), after *string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := after // each range over the sequence starts from the beginning
		for {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if next == nil || *next == "" {
				return
			}
			cursor = next
		}
	}
}
