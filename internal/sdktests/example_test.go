package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Run is the one-call path: start an execution, follow it, answer its approval request, get
// the output. (The examples start an in-process server with the deterministic mock provider;
// point sdk.New at yours instead.)
func Example() {
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
	res, err := c.Run(ctx, api.StartExecutionRequest{
		ConversationID: conv.ID,
		ProviderID:     "mock",
		Input:          "hello runtime",
		Config:         api.JSONObject{"requireApproval": true},
	}, sdk.RunHandlers{
		OnAction: func(ctx context.Context, action api.ActionRequest) (api.ActionResponse, error) {
			fmt.Println("asked:", action.Title)
			return api.ActionResponse{Approved: new(true)}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Execution.State, res.Output)
	// Output:
	// asked: Approve mock execution
	// succeeded Echo: hello runtime
}

// Events yields each event once, in order, and ends after the terminal event; it reconnects
// and resumes by itself if the connection drops. Let the loop run to its end (or break at the
// terminal event) and the stream's connection goes back to the client's pool for the next call.
func ExampleClient_Events() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, _ := sdk.New(serverURL)
	conv, _ := c.CreateConversation(ctx, api.CreateConversationRequest{})
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "hello runtime"})
	if err != nil {
		log.Fatal(err)
	}
	for event, err := range c.Events(ctx, exec.ID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		if event.Type == api.StandardEventTypeOutputTextDelta {
			delta, err := event.Data.AsTextDeltaData() // the typed data of this event's type
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%d %s %q\n", event.Sequence, event.Type, delta.Text)
			continue
		}
		fmt.Println(event.Sequence, event.Type)
	}
	// Output:
	// 1 run.queued
	// 2 run.started
	// 3 output.text.delta "Echo: "
	// 4 output.text.delta "hello "
	// 5 output.text.delta "runtime"
	// 6 output.text.done
	// 7 run.completed
}

// WaitForTerminal returns the final snapshot of an execution someone else started.
func ExampleClient_WaitForTerminal() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, _ := sdk.New(serverURL)
	conv, _ := c.CreateConversation(ctx, api.CreateConversationRequest{})
	exec, _ := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "ping",
		IdempotencyKey: new("job-17")})
	final, err := c.WaitForTerminal(ctx, exec.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.State, *final.FinalOutput)

	// The same key in the same conversation names the same execution: no second run.
	again, _ := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "ping",
		IdempotencyKey: new("job-17")})
	fmt.Println(again.ID == exec.ID, again.State)
	// Output:
	// succeeded Echo: ping
	// true succeeded
}

// Errors carry the protocol's code; test it with errors.Is, read the rest with errors.As.
func ExampleError() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, _ := sdk.New(serverURL)
	conv, _ := c.CreateConversation(ctx, api.CreateConversationRequest{})
	_, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		RequiredCapabilities: &[]string{"extension.sandbox"}})

	var apiErr *sdk.Error
	if errors.Is(err, sdk.ErrCapabilityUnsupported) && errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
		fmt.Println(apiErr.Message)
		fmt.Println(apiErr.Details["capabilities"])
	}
	// Output:
	// 422 CAPABILITY_UNSUPPORTED
	// Provider mock does not support required capabilities
	// [extension.sandbox]
}

// Without RunHandlers.OnAction, Run returns at the first pending request: the error carries the
// execution as the server has it and the request, to be answered (or the execution cancelled)
// before following it to the end.
func ExampleClient_Run_actionRequired() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()

	c, _ := sdk.New(serverURL)
	conv, _ := c.CreateConversation(ctx, api.CreateConversationRequest{})
	_, err := c.Run(ctx, api.StartExecutionRequest{
		ConversationID: conv.ID,
		ProviderID:     "mock",
		Input:          "hello runtime",
		Config:         api.JSONObject{"requireApproval": true},
	}, sdk.RunHandlers{})
	var pending *sdk.ActionRequiredError
	if !errors.As(err, &pending) {
		log.Fatal(err)
	}
	fmt.Println(pending.Execution.State, "-", pending.Action.Title)

	exec := pending.Execution.ID
	if _, err := c.RespondToAction(ctx, exec, pending.Action.ID, api.ActionResponse{Approved: new(true)}); err != nil {
		log.Fatal(err)
	}
	final, err := c.WaitForTerminal(ctx, exec)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.State, *final.FinalOutput)
	// Output:
	// awaiting_approval - Approve mock execution
	// succeeded Echo: hello runtime
}

// A chat service keeps one conversation per chat, and says what a message means while the
// previous one is still being answered: here it waits for its turn (enqueue). Later, even in
// another process, the chat is continued by its id and read back in order.
func ExampleClient_NewConversation() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := sdk.New(serverURL)

	chat, err := c.NewConversation(ctx, api.BusyPolicyEnqueue, api.JSONObject{"user": "alice"})
	if err != nil {
		log.Fatal(err)
	}
	// The first message waits for someone's approval, so it is still being answered…
	first, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "first", Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		log.Fatal(err)
	}
	// …when the second arrives: it is accepted and waits for the first.
	second, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "second"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(*chat.BusyPolicy, second.State, "waiting for the first:", slices.Equal(second.WaitingFor, []string{first.ID}))
	if _, err := c.CancelExecution(ctx, first.ID, api.CancelExecutionRequest{}); err != nil { // nobody approved
		log.Fatal(err)
	}
	done, err := c.WaitForTerminal(ctx, second.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, *done.FinalOutput)

	again, err := c.ContinueConversation(ctx, chat.ID)
	if err != nil {
		log.Fatal(err)
	}
	history, err := again.History(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, turn := range history {
		fmt.Println(turn.Input, turn.State)
	}
	// Output:
	// enqueue queued waiting for the first: true
	// succeeded Echo: second
	// first cancelled
	// second succeeded
}

// Under the reject policy a message that arrives while the previous one is being answered is
// refused: the error says which executions the conversation is busy with.
func ExampleBusyError() {
	serverURL, stop := startExampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := sdk.New(serverURL)

	chat, err := c.NewConversation(ctx, api.BusyPolicyReject, nil)
	if err != nil {
		log.Fatal(err)
	}
	first, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "first", Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "second"})
	var busy *sdk.BusyError
	if errors.As(err, &busy) {
		fmt.Println("busy with the first:", slices.Equal(busy.ExecutionIDs, []string{first.ID}), busy.Answer.StatusCode)
	}
	// A start may override the conversation's policy: this one interrupts the first.
	interrupt := api.BusyPolicyInterrupt
	res, err := chat.Run(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "second", BusyPolicy: &interrupt}, sdk.RunHandlers{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Execution.State, res.Output)
	cancelled, _ := c.GetExecution(ctx, first.ID)
	fmt.Println("the first:", cancelled.State)
	// Output:
	// busy with the first: true 409
	// succeeded Echo: second
	// the first: cancelled
}
