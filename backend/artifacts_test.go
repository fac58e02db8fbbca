package backend_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestArtifactIsStoredAndEventDataEqualsListing(t *testing.T) {
	rt := openRuntime(t, "", optsNone())
	exec := start(t, rt, newConversation(t, rt), startOpts{input: "hello", config: api.JSONObject{"artifactName": "synthetic.txt"}, capabilities: []string{"artifact.list"}})
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	list, err := rt.ListArtifacts(ctxT(t), exec.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListArtifacts: %v %v", list, err)
	}
	a := list[0]
	if a.ID != "artifact-"+exec.ID || a.Name != "synthetic.txt" || a.MediaType != "text/plain" || a.ExecutionID != exec.ID || a.URI != nil || a.Metadata == nil {
		t.Fatalf("artifact %+v", a)
	}
	var created []api.RuntimeEvent
	for _, e := range events {
		if e.Type == api.StandardEventTypeArtifactCreated {
			created = append(created, e)
		}
	}
	if len(created) != 1 || jsonString(created[0].Data) != jsonString(a) {
		t.Fatalf("event data %s != listing %s", jsonString(created[0].Data), jsonString(a))
	}
}

func TestArtifactMetadataAndUriAreKept(t *testing.T) {
	p := &scripted{run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		return backend.Result{}, run.Emit(api.StandardEventTypeArtifactCreated, api.JSONObject{
			"id": "a1", "name": "report.pdf", "mediaType": "application/pdf", "uri": "s3://bucket/report.pdf",
			"metadata": map[string]any{"size": 12}, "unknown": "dropped",
		})
	}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	events, final := finalOf(t, rt, exec.ID)
	checkLog(t, final, events)
	list, _ := rt.ListArtifacts(ctxT(t), exec.ID)
	raw, _ := json.Marshal(list[0])
	want := `{"createdAt":"` + list[0].CreatedAt + `","executionId":"` + exec.ID + `","id":"a1","mediaType":"application/pdf","metadata":{"size":12},"name":"report.pdf","uri":"s3://bucket/report.pdf"}`
	if string(raw) != want || jsonString(events[2].Data) != want {
		t.Fatalf("artifact %s\nevent %s\nwant %s", raw, jsonString(events[2].Data), want)
	}
}

func TestInvalidArtifactFailsWithEmptyList(t *testing.T) {
	p := &scripted{run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		return backend.Result{}, run.EmitArtifact(api.CreateArtifactInput{ID: "artifact-invalid", Name: "", MediaType: "text/plain"})
	}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	wantFailed(t, rt, exec.ID, "Provider emitted an invalid artifact descriptor")
	if list, err := rt.ListArtifacts(ctxT(t), exec.ID); err != nil || len(list) != 0 || list == nil {
		t.Fatalf("list %#v %v", list, err)
	}
}

func TestDuplicateArtifactIDFailsKeepingTheFirst(t *testing.T) {
	p := &scripted{run: func(_ context.Context, run *backend.Run) (backend.Result, error) {
		in := api.CreateArtifactInput{ID: "artifact-duplicate", Name: "first", MediaType: "text/plain"}
		if err := run.EmitArtifact(in); err != nil {
			return backend.Result{}, err
		}
		in.Name = "second"
		return backend.Result{}, run.EmitArtifact(in)
	}}
	rt := scriptedRuntime(t, backend.Options{}, p)
	exec := startScripted(t, rt, newConversation(t, rt))
	events := wantFailed(t, rt, exec.ID, "Provider emitted duplicate artifact id: artifact-duplicate")
	n := 0
	for _, e := range events {
		if e.Type == api.StandardEventTypeArtifactCreated {
			n++
		}
	}
	list, _ := rt.ListArtifacts(ctxT(t), exec.ID)
	if n != 1 || len(list) != 1 || list[0].Name != "first" {
		t.Fatalf("%d events, list %+v", n, list)
	}
	_, err := rt.ListArtifacts(ctxT(t), "exec_missing")
	wantCode(t, err, backend.CodeNotFound, "Execution not found: exec_missing")
}
