package api_test

import (
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// StartExecutionRequest.Config is a plain map (x-go-type-skip-optional-pointer): a request
// without config is encoded without the field, as before when it was a nil pointer, and a
// config is sent as given.
func TestStartExecutionRequestConfigOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		config api.JSONObject
		want   string
	}{
		{nil, `{"conversationId":"c","input":"hi","providerId":"mock"}`},
		{api.JSONObject{}, `{"conversationId":"c","input":"hi","providerId":"mock"}`}, // absent means {} to the server
		{api.JSONObject{"requireApproval": true}, `{"config":{"requireApproval":true},"conversationId":"c","input":"hi","providerId":"mock"}`},
	} {
		raw, err := json.Marshal(api.StartExecutionRequest{ConversationID: "c", ProviderID: "mock", Input: "hi", Config: tc.config})
		if err != nil || string(raw) != tc.want {
			t.Errorf("config %v encodes %s, %v; want %s", tc.config, raw, err, tc.want)
		}
	}
}
