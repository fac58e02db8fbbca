package api_test

import (
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// An event decoded into RuntimeEvent and encoded again is the event as the server sent it: the
// union keeps the data's bytes (key order and fields no schema names included), so a client that
// stores or forwards events changes nothing on the wire.
func TestRuntimeEventDataRoundTripsByteForByte(t *testing.T) {
	for _, wire := range []string{
		`{"data":{"providerId":"mock"},"executionId":"exec_1","id":"exec_1:1","sequence":1,"time":"2026-09-02T08:15:30.123Z","type":"run.queued"}`,
		`{"data":{"text":"Echo: ","zExtra":[1,{"b":2,"a":1}]},"executionId":"exec_1","id":"exec_1:3","sequence":3,"time":"2026-09-02T08:15:30.123Z","type":"output.text.delta"}`,
		`{"data":{"title":"Approve","kind":"approval","id":"act_1","executionId":"exec_1","payload":{},"createdAt":"2026-09-02T08:15:30.123Z"},"executionId":"exec_1","id":"exec_1:4","sequence":4,"time":"2026-09-02T08:15:30.123Z","type":"action.required"}`,
		`{"data":{},"executionId":"exec_1","id":"exec_1:9","sequence":9,"time":"2026-09-02T08:15:30.123Z","type":"run.cancelled"}`,
	} {
		var ev api.RuntimeEvent
		if err := json.Unmarshal([]byte(wire), &ev); err != nil {
			t.Fatalf("decode %s: %v", wire, err)
		}
		again, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != wire {
			t.Errorf("re-encoded\n%s\nwant\n%s", again, wire)
		}
	}
}

// Each event type's data reads through its generated accessor, optional fields as pointers.
func TestRuntimeEventDataAccessors(t *testing.T) {
	decode := func(data string) api.EventData {
		t.Helper()
		var ev api.RuntimeEvent
		if err := json.Unmarshal([]byte(`{"data":`+data+`}`), &ev); err != nil {
			t.Fatal(err)
		}
		return ev.Data
	}
	if d, err := decode(`{"text":"hi","extra":1}`).AsTextDeltaData(); err != nil || d.Text != "hi" {
		t.Errorf("AsTextDeltaData = %+v, %v", d, err)
	}
	action, err := decode(`{"id":"act_1","executionId":"exec_1","kind":"input","title":"Name?","payload":{"k":"v"},"createdAt":"2026-09-02T08:15:30.123Z"}`).AsActionRequest()
	if err != nil || action.ID != "act_1" || action.Kind != api.ActionKindInput || action.Payload["k"] != "v" || action.Description != nil {
		t.Errorf("AsActionRequest = %+v, %v", action, err)
	}
	responded, err := decode(`{"actionId":"act_1"}`).AsActionRespondedData()
	if err != nil || responded.ActionID != "act_1" || responded.Approved != nil {
		t.Errorf("AsActionRespondedData without approved = %+v, %v", responded, err)
	}
	if responded, err := decode(`{"actionId":"act_1","approved":false}`).AsActionRespondedData(); err != nil || responded.Approved == nil || *responded.Approved {
		t.Errorf("AsActionRespondedData with approved=false = %+v, %v", responded, err)
	}
	if d, err := decode(`{"finalOutput":"done"}`).AsRunCompletedData(); err != nil || d.FinalOutput != "done" {
		t.Errorf("AsRunCompletedData = %+v, %v", d, err)
	}
	if d, err := decode(`{"code":"PROVIDER_ERROR","message":"boom"}`).AsRunFailedData(); err != nil || d.Code != "PROVIDER_ERROR" || d.Message != "boom" {
		t.Errorf("AsRunFailedData = %+v, %v", d, err)
	}
	if d, err := decode(`{"reason":"stop"}`).AsRunCancelledData(); err != nil || d.Reason == nil || *d.Reason != "stop" || d.ProviderCleanupError != nil {
		t.Errorf("AsRunCancelledData = %+v, %v", d, err)
	}
	// The actor extension (who answered, who cancelled), when the server records identities.
	if d, err := decode(`{"actionId":"act_1","actor":{"id":"alice"},"approved":true}`).AsActionRespondedData(); err != nil || d.Actor == nil || d.Actor.ID != "alice" {
		t.Errorf("AsActionRespondedData with actor = %+v, %v", d, err)
	}
	if d, err := decode(`{"actor":{"id":"bob"}}`).AsRunCancelledData(); err != nil || d.Actor == nil || d.Actor.ID != "bob" || d.Reason != nil {
		t.Errorf("AsRunCancelledData with actor = %+v, %v", d, err)
	}
	if d, err := decode(`{"provider":"acp","method":"session/update","params":{"n":1}}`).AsProviderEventData(); err != nil || d["method"] != "session/update" {
		t.Errorf("AsProviderEventData = %v, %v", d, err)
	}
	// Data of the wrong shape is an error, not a zero value that looks valid.
	if _, err := decode(`{"text":5}`).AsTextDeltaData(); err == nil {
		t.Error(`AsTextDeltaData of {"text":5}: no error`)
	}
}

// A Go program builds event data with the generated From… methods; the JSON is the schema's.
func TestRuntimeEventDataFromTyped(t *testing.T) {
	var data api.EventData
	if err := data.FromRunFailedData(api.RunFailedData{Code: "PROVIDER_ERROR", Message: "boom"}); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(data)
	if err != nil || string(raw) != `{"code":"PROVIDER_ERROR","message":"boom"}` {
		t.Fatalf("FromRunFailedData encodes %s, %v", raw, err)
	}
}
