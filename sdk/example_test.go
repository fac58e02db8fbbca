package sdk_test

// The examples of go doc. Those that call a server have no "Output:" comment: they are
// compiled, not run, since the SDK module carries no server. The same programs run against the
// real server, with their output checked, in the server module (internal/sdktests, whose
// examples start the server in process).

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// New checks the base URL and applies options; it does not call the server. Retries and stall
// timeouts have defaults that suit most services (see "Retries and timeouts" in the package
// documentation).
func ExampleNew() {
	c, err := sdk.New("http://127.0.0.1:4310",
		sdk.WithBearerToken("token-from-your-secret-store"),
		sdk.WithRetry(sdk.RetryPolicy{MaxAttempts: 6}), // the other fields keep their defaults
		sdk.WithStallTimeout(90*time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	_ = c

	_, err = sdk.New("localhost:4310") // no scheme
	fmt.Println(err)
	// Output:
	// harness: base URL "localhost:4310": want http(s)://host[:port][/prefix]
}

// Run starts an execution, follows it, answers its action requests with OnAction and returns
// the final snapshot and output: one call, and with a harness-edge server one request for
// the whole run.
func ExampleClient_Run() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
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
		Input:          "deploy the site",
		Config:         api.JSONObject{"requireApproval": true},
	}, sdk.RunHandlers{
		OnAction: func(ctx context.Context, action api.ActionRequest) (api.ActionResponse, error) {
			approved := action.Kind == api.ActionKindApproval // ask a person here
			return api.ActionResponse{Approved: &approved}, nil
		},
		OnText: func(text string) { fmt.Print(text) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Println(res.Execution.State, res.Output)
}

// StartExecution returns at once with the queued execution; Events then yields its events,
// each once and in order, through reconnects, and ends after the terminal one.
func ExampleClient_StartExecution() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		log.Fatal(err)
	}
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{
		ConversationID: conv.ID,
		ProviderID:     "mock",
		Input:          "hello runtime",
		IdempotencyKey: ptr("job-42"), // the same key never starts a second execution
	})
	if err != nil {
		log.Fatal(err)
	}
	for event, err := range c.Events(ctx, exec.ID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(event.Sequence, event.Type)
	}
}

// RespondToAction answers an approval or input request that an event stream announced.
func ExampleClient_RespondToAction() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	executionID := "exec_…" // an execution that asks for approval
	for event, err := range c.Events(ctx, executionID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		if event.Type != api.StandardEventTypeActionRequired {
			continue
		}
		action, err := event.Data.AsActionRequest()
		if err != nil {
			log.Fatal(err)
		}
		approved := true
		_, err = c.RespondToAction(ctx, executionID, action.ID, api.ActionResponse{Approved: &approved})
		switch {
		case errors.Is(err, sdk.ErrActionNotFound):
			// answered already (by another client) or withdrawn: the stream goes on
		case err != nil:
			log.Fatal(err)
		}
	}
}

// CancelExecution asks the provider to stop and returns once the execution is cancelled (or
// had ended already, which is not an error: the snapshot says how it ended).
func ExampleClient_CancelExecution() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	exec, err := c.CancelExecution(ctx, "exec_…", api.CancelExecutionRequest{Reason: ptr("the user closed the tab")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exec.State)
}

// AllExecutions walks every page of the listing, newest first; a filter narrows it.
func ExampleClient_AllExecutions() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	waiting := api.ListState{api.ExecutionStateAwaitingApproval, api.ExecutionStateAwaitingInput}
	for exec, err := range c.AllExecutions(ctx, &api.ListExecutionsParams{State: &waiting}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(exec.ID, exec.State, exec.CreatedAt)
	}
}

// A chat service: one conversation per chat, each message the next execution in it. The busy
// policy says what a message means while the previous one is still being answered: enqueue
// waits its turn (WaitingFor names what it waits for), reject refuses it (a *BusyError),
// interrupt cancels the previous one. (Run against a server, with its output checked, in the
// server module's internal/sdktests.)
func ExampleClient_NewConversation() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	chat, err := c.NewConversation(ctx, api.BusyPolicyEnqueue, api.JSONObject{"user": "alice"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := chat.Run(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "hello"}, sdk.RunHandlers{
		OnText: func(text string) { fmt.Print(text) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Println(res.Execution.State)
}

// ContinueConversation picks a chat up again by the id the service kept (after a restart, or
// on another replica); History reads its turns back, oldest first.
func ExampleClient_ContinueConversation() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	chat, err := c.ContinueConversation(ctx, "conv_4b1f6f0cb4f84b5c8d7b1c2f0e3a9d11")
	if err != nil {
		log.Fatal(err) // sdk.ErrNotFound: no such chat
	}
	turns, err := chat.History(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, turn := range turns {
		fmt.Println(turn.Input, turn.State)
	}
	if _, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "and then?"}); err != nil {
		log.Fatal(err)
	}
}

// Under the reject policy, a start while the conversation is busy is refused; errors.As finds
// which executions it is busy with.
func ExampleBusyError() {
	ctx := context.Background()
	c, err := sdk.New("http://127.0.0.1:4310")
	if err != nil {
		log.Fatal(err)
	}
	chat, err := c.NewConversation(ctx, api.BusyPolicyReject, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = chat.Start(ctx, api.StartExecutionRequest{ProviderID: "mock", Input: "hello"})
	var busy *sdk.BusyError
	if errors.As(err, &busy) {
		fmt.Println("still answering:", busy.ExecutionIDs)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
}

// VerifyWebhook checks a notification's Standard Webhooks signature and timestamp before the
// payload is trusted. Here a handler receives one signed as the runtime signs it.
func ExampleVerifyWebhook() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the subscription's secret
	receive := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20)) // verify the bytes as received
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		payload, err := sdk.VerifyWebhook(secret, r.Header, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// Delivery is at least once: deduplicate on r.Header.Get("webhook-id").
		fmt.Println(payload.Type, payload.Data.Execution.ID, payload.Data.Execution.State)
	})

	body := `{"type":"run.completed","timestamp":"2026-09-02T08:15:30.140Z","data":{"event":{"id":"exec_1:7","executionId":"exec_1","sequence":7,"type":"run.completed","time":"2026-09-02T08:15:30.140Z","data":{}},"execution":{"id":"exec_1","conversationId":"conv_1","providerId":"mock","state":"succeeded","createdAt":"2026-09-02T08:15:30.000Z","updatedAt":"2026-09-02T08:15:30.140Z"}}}`
	for _, forged := range []bool{false, true} {
		req := signed(secret, "msg_1", time.Now(), body)
		if forged {
			req = signed(secret, "msg_2", time.Now(), strings.Replace(body, "succeeded", "failed", 1))
			req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
		}
		rec := httptest.NewRecorder()
		receive.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// run.completed exec_1 succeeded
	// 200
	// 401
}

// signed is a notification as the runtime sends it: the HMAC-SHA256 of
// "{id}.{timestamp}.{body}" under the secret's key, in webhook-signature.
func signed(secret, id string, at time.Time, body string) *http.Request {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	req := httptest.NewRequest(http.MethodPost, "/hooks/harness", strings.NewReader(body))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return req
}

func ptr[T any](v T) *T { return &v }
