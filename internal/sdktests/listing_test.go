package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

type countingTransport struct {
	base     http.RoundTripper
	requests atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	return c.base.RoundTrip(r)
}

// finishedExecutions starts n executions in one conversation and waits for each to end;
// returns the conversation and the ids, newest first.
func finishedExecutions(t *testing.T, c *sdk.Client, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: fmt.Sprint("run ", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitForTerminal(ctx, exec.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, exec.ID)
	}
	// Ids are time-ordered and createdAt is their millisecond: newest first is the reverse
	// creation order here (one client, one after the other).
	slices.Reverse(ids)
	return conv.ID, ids
}

func TestAllExecutionsWalksEveryPage(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	conv, want := finishedExecutions(t, c, 7)
	other, _ := finishedExecutions(t, c, 2)

	collect := func(seq func(func(api.Execution, error) bool)) []string {
		var got []string
		for exec, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, exec.ID)
		}
		return got
	}
	limit := 3
	got := collect(c.AllConversationExecutions(ctx, conv, &api.ListConversationExecutionsParams{Limit: &limit}))
	if !slices.Equal(got, want) {
		t.Fatalf("conversation: %v, want %v", got, want)
	}
	all := collect(c.AllExecutions(ctx, &api.ListExecutionsParams{Limit: &limit}))
	if len(all) != 9 || !slices.Equal(all[2:], want) {
		t.Fatalf("all: %v (want the 2 of %s, then %v)", all, other, want)
	}
	// The same sequence ranged twice starts over; a loop stopped early stops fetching.
	seq := c.AllExecutions(ctx, &api.ListExecutionsParams{Limit: &limit})
	if again := collect(seq); !slices.Equal(again, all) {
		t.Fatalf("second range: %v", again)
	}
	// Counted through a client whose transport counts requests: 4 executions at 3 a page is
	// two pages, and no third is fetched after the loop stops.
	counting := &countingTransport{base: http.DefaultTransport}
	cc := newClient(t, srv.URL, sdk.WithHTTPClient(&http.Client{Transport: counting}))
	seq = cc.AllExecutions(ctx, &api.ListExecutionsParams{Limit: &limit})
	var firstFour []string
	for exec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		firstFour = append(firstFour, exec.ID)
		if len(firstFour) == 4 {
			break
		}
	}
	if !slices.Equal(firstFour, all[:4]) {
		t.Fatalf("stopped early: %v", firstFour)
	}
	if n := counting.requests.Load(); n != 2 {
		t.Fatalf("stopping after 4 of 9 fetched %d pages, want 2", n)
	}

	// One page by hand, and a state filter.
	states := []api.ExecutionState{api.ExecutionStateSucceeded}
	page, err := c.ListExecutions(ctx, &api.ListExecutionsParams{State: &states, Limit: &limit})
	if err != nil || len(page.Executions) != 3 || page.NextCursor == nil {
		t.Fatalf("first page: %+v %v", page, err)
	}
	next, err := c.ListExecutions(ctx, &api.ListExecutionsParams{State: &states, Limit: &limit, After: page.NextCursor})
	if err != nil || next.Executions[0].ID != all[3] {
		t.Fatalf("second page: %+v %v", next, err)
	}
	none := []api.ExecutionState{api.ExecutionStateRunning, api.ExecutionStateCancelled}
	if got := collect(c.AllExecutions(ctx, &api.ListExecutionsParams{State: &none})); len(got) != 0 {
		t.Fatalf("running or cancelled: %v", got)
	}
}

func TestAllExecutionsYieldsTheErrorOnce(t *testing.T) {
	srv := newTestServer(t)
	c := newClient(t, srv.URL)
	ctx := context.Background()

	var errs []error
	for _, err := range c.AllConversationExecutions(ctx, "conv_missing", nil) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], sdk.ErrNotFound) {
		t.Fatalf("unknown conversation: %v", errs)
	}
	tooMany := 201
	errs = nil
	for _, err := range c.AllExecutions(ctx, &api.ListExecutionsParams{Limit: &tooMany}) {
		errs = append(errs, err)
	}
	var e *sdk.Error
	if len(errs) != 1 || !errors.Is(errs[0], sdk.ErrValidation) || !errors.As(errs[0], &e) {
		t.Fatalf("limit 201: %v", errs)
	}
	if fmt.Sprint(e.Details["errors"]) != "[map[parameter:limit reason:must be an integer from 1 to 200]]" {
		t.Fatalf("details of limit 201: %+v", e.Details)
	}
}

// AllExecutions finds executions again, newest first, page after page.
func ExampleClient_AllExecutions() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, err := sdk.New(serverURL)
	if err != nil {
		log.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		log.Fatal(err)
	}
	for _, input := range []string{"first", "second"} {
		exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: input})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := c.WaitForTerminal(ctx, exec.ID); err != nil {
			log.Fatal(err)
		}
	}

	succeeded := []api.ExecutionState{api.ExecutionStateSucceeded}
	for exec, err := range c.AllExecutions(ctx, &api.ListExecutionsParams{State: &succeeded}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(exec.Input, exec.State)
	}
	// Output:
	// second succeeded
	// first succeeded
}
