// Command sdk-consumer is the smallest service that uses the Go SDK: a module of its own on
// Go 1.24 that requires only github.com/harness-edge/harness-edge/sdk. It runs one execution
// that asks for an approval, approves it and prints the output. scripts/sdk-consumer-check.sh
// copies it out of the repository, tidies it and runs it against bin/caddy in CI.
//
//	HARNESS_URL=http://127.0.0.1:4310 go run .
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func main() {
	url := os.Getenv("HARNESS_URL")
	if url == "" {
		url = "http://127.0.0.1:4310" // make run
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := sdk.New(url)
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
		Input:          "hello from a service",
		Config:         api.JSONObject{"requireApproval": true},
	}, sdk.RunHandlers{
		OnAction: func(_ context.Context, action api.ActionRequest) (api.ActionResponse, error) {
			fmt.Println("approving:", action.Title)
			approved := true
			return api.ActionResponse{Approved: &approved}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Execution.State, res.Output)
}
