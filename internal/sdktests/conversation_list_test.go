package sdk_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// AllConversations walks every page, most recently active first; RenameConversation and
// UpdateConversation change what the listing and GetConversation show; an unknown id is
// ErrNotFound.
func TestAllConversationsAndRename(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	var want []string // most recently active first
	for range 5 {
		conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{conv.ID}, want...)
		// The listing orders by activity to the millisecond, then by id (random within one
		// millisecond): conversations made a millisecond apart have one order.
		time.Sleep(2 * time.Millisecond)
	}
	// A run in the oldest makes it the most recently active.
	oldest := want[len(want)-1]
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: oldest, ProviderID: "mock", Input: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForTerminal(ctx, exec.ID); err != nil {
		t.Fatal(err)
	}
	want = append([]string{oldest}, want[:len(want)-1]...)

	limit := 2
	var got []string
	for conv, err := range c.AllConversations(ctx, &api.ListConversationsParams{Limit: &limit}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, conv.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AllConversations in pages of 2: %v, want %v", got, want)
	}

	renamed, err := c.RenameConversation(ctx, oldest, "Trip to Lisbon")
	if err != nil || renamed.Title == nil || *renamed.Title != "Trip to Lisbon" {
		t.Fatalf("RenameConversation: %+v, %v", renamed, err)
	}
	updated, err := c.UpdateConversation(ctx, oldest, api.UpdateConversationRequest{Metadata: &map[string]any{"pinned": true}})
	if err != nil || updated.Metadata["pinned"] != true || updated.Title == nil {
		t.Fatalf("UpdateConversation of the metadata: %+v, %v", updated, err)
	}
	key := "pinned"
	page, err := c.ListConversations(ctx, &api.ListConversationsParams{MetadataKey: &key})
	if err != nil || len(page.Conversations) != 1 || page.Conversations[0].ID != oldest ||
		page.Conversations[0].Title == nil || *page.Conversations[0].Title != "Trip to Lisbon" {
		t.Fatalf("ListConversations by metadataKey: %+v, %v", page, err)
	}
	if _, err := c.RenameConversation(ctx, "conv_0123456789abcdef0123456789abcdef", "x"); !errors.Is(err, sdk.ErrNotFound) {
		t.Fatalf("renaming an unknown conversation: %v, want ErrNotFound", err)
	}
}
