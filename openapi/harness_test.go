package openapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/harness-edge/harness-edge/openapi"
)

const maxSafeInteger = 9007199254740991

// loadModel parses harness.yaml with a real OpenAPI 3.1 loader and fails on any error.
func loadModel(t *testing.T) (libopenapi.Document, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(openapi.Document)
	if err != nil {
		t.Fatalf("load harness.yaml: %v", err)
	}
	if got := doc.GetVersion(); got != "3.1.0" {
		t.Fatalf("openapi version = %q, want 3.1.0", got)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build model: %v", err)
	}
	return doc, &model.Model
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	doc, _ := loadModel(t)
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	ok, verrs := v.ValidateDocument()
	if !ok {
		for _, e := range verrs {
			t.Errorf("document invalid: %s: %s", e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", f.KeywordLocation, f.Reason)
			}
		}
	}
}

// operation is one route of the protocol as a client sees it.
type operation struct {
	method, path, id string
	// errors are the error statuses the operation can answer; each must carry a Problem.
	errors []string
}

var operations = []operation{
	{"GET", "/healthz", "health", []string{"403", "405"}},
	{"GET", "/readyz", "ready", []string{"403", "405", "503"}},
	{"GET", "/v1/runtime", "describeRuntime", []string{"400", "401", "403", "405", "500", "503"}},
	{"GET", "/v1/runtime/capabilities", "listCapabilities", []string{"400", "401", "403", "405", "500", "503"}},
	{"POST", "/v1/conversations", "createConversation", []string{"400", "401", "403", "405", "408", "413", "500", "503"}},
	{"GET", "/v1/conversations", "listConversations", []string{"400", "401", "403", "405", "500", "503"}},
	{"PATCH", "/v1/conversations/{id}", "updateConversation", []string{"400", "401", "403", "404", "405", "408", "409", "413", "500", "503"}},
	{"DELETE", "/v1/conversations/{id}", "deleteConversation", []string{"400", "401", "403", "404", "405", "409", "500", "503"}},
	{"GET", "/v1/conversations/{id}", "getConversation", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"GET", "/v1/conversations/{id}/executions", "listConversationExecutions", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"GET", "/v1/executions", "listExecutions", []string{"400", "401", "403", "405", "500", "503"}},
	{"GET", "/v1/usage", "getUsage", []string{"400", "401", "403", "405", "500", "503"}},
	{"GET", "/v1/conversations/{id}/events", "listOrStreamConversationEvents", []string{"400", "401", "403", "404", "405", "410", "500", "503"}},
	{"GET", "/v1/events", "listOrStreamTenantEvents", []string{"400", "401", "403", "405", "410", "500", "503"}},
	{"GET", "/v1/openapi.yaml", "getOpenAPIDocument", []string{"400", "401", "403", "405"}},
	{"GET", "/v1/openapi.json", "getOpenAPIDocumentJSON", []string{"400", "401", "403", "405"}},
	{"POST", "/v1/executions", "startExecution", []string{"400", "401", "403", "404", "405", "408", "409", "413", "422", "429", "500", "503"}},
	{"GET", "/v1/executions/{id}", "getExecution", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"GET", "/v1/executions/{id}/artifacts", "listArtifacts", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"POST", "/v1/executions/{id}:cancel", "cancelExecution", []string{"400", "401", "403", "404", "405", "408", "413", "500", "503"}},
	{"GET", "/v1/executions/{id}/events", "listOrStreamEvents", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"POST", "/v1/executions/{id}/actions/{actionId}:respond", "respondToAction", []string{"400", "401", "403", "404", "405", "408", "409", "413", "500", "503"}},
	{"GET", "/v1/actions", "listActions", []string{"400", "401", "403", "405", "500", "503"}},
	{"GET", "/v1/action-rules", "listActionRules", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"POST", "/v1/action-rules", "createActionRule", []string{"400", "401", "403", "404", "405", "413", "500", "503"}},
	{"GET", "/v1/action-rules/{id}", "getActionRule", []string{"400", "401", "403", "404", "405", "500", "503"}},
	{"POST", "/v1/action-rules/{id}:revoke", "revokeActionRule", []string{"400", "401", "403", "404", "405", "409", "500", "503"}},
}

func operationOf(item *v3.PathItem, method string) *v3.Operation {
	switch method {
	case "GET":
		return item.Get
	case "POST":
		return item.Post
	case "PATCH":
		return item.Patch
	case "DELETE":
		return item.Delete
	}
	return nil
}

func TestOperationsAndProblemResponses(t *testing.T) {
	_, model := loadModel(t)
	var count int
	for _, item := range model.Paths.PathItems.FromOldest() {
		for _, op := range []*v3.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch, item.Head, item.Options} {
			if op != nil {
				count++
			}
		}
	}
	if count != len(operations) {
		t.Errorf("document has %d operations, want %d", count, len(operations))
	}
	for _, want := range operations {
		item := model.Paths.PathItems.GetOrZero(want.path)
		if item == nil {
			t.Errorf("path %s missing", want.path)
			continue
		}
		op := operationOf(item, want.method)
		if op == nil {
			t.Errorf("%s %s missing", want.method, want.path)
			continue
		}
		if op.OperationId != want.id {
			t.Errorf("%s %s operationId = %q, want %q", want.method, want.path, op.OperationId, want.id)
		}
		if strings.TrimSpace(op.Description) == "" {
			t.Errorf("%s has no description", want.id)
		}
		var statuses []string
		for code := range op.Responses.Codes.KeysFromOldest() {
			if code[0] == '4' || code[0] == '5' {
				statuses = append(statuses, code)
			}
		}
		sort.Strings(statuses)
		if !slices.Equal(statuses, want.errors) {
			t.Errorf("%s error statuses = %v, want %v", want.id, statuses, want.errors)
		}
		for _, code := range want.errors {
			resp := op.Responses.Codes.GetOrZero(code)
			media := resp.Content.GetOrZero("application/json")
			if media == nil || media.Schema == nil || !strings.HasSuffix(media.Schema.GetReference(), "/Problem") {
				t.Errorf("%s %s does not answer a Problem", want.id, code)
			}
		}
		if resp := op.Responses.Codes.GetOrZero("405"); resp != nil && resp.Headers.GetOrZero("Allow") == nil {
			t.Errorf("%s 405 has no Allow header", want.id)
		}
	}
}

func TestEventsOperation(t *testing.T) {
	_, model := loadModel(t)
	op := model.Paths.PathItems.GetOrZero("/v1/executions/{id}/events").Get
	ok := op.Responses.Codes.GetOrZero("200")
	for _, ct := range []string{"application/json", "text/event-stream"} {
		if ok.Content.GetOrZero(ct) == nil {
			t.Errorf("events 200 lacks %s", ct)
		}
	}
	params := map[string]*v3.Parameter{}
	for _, p := range op.Parameters {
		params[p.In+":"+p.Name] = p
	}
	after := params["query:after"]
	if after == nil {
		t.Fatal("no after query parameter")
	}
	s := after.Schema.Schema()
	if s.Minimum == nil || *s.Minimum != 0 || s.Maximum == nil || *s.Maximum != maxSafeInteger {
		t.Errorf("after bounds = %v..%v, want 0..%d", s.Minimum, s.Maximum, maxSafeInteger)
	}
	if params["query:limit"] == nil {
		t.Error("no limit query parameter")
	}
	last := params["header:Last-Event-ID"]
	if last == nil || (last.Required != nil && *last.Required) {
		t.Error("Last-Event-ID must be an optional header parameter")
	}
}

// TestTenancyResponses: the tenancy additions are documented where a client looks: 429 carries
// Retry-After, and both are marked as harness-edge extensions.
func TestTenancyResponses(t *testing.T) {
	_, model := loadModel(t)
	for name, code := range map[string]string{"Unauthorized": "UNAUTHENTICATED", "TooManyRequests": "RATE_LIMITED"} {
		resp := model.Components.Responses.GetOrZero(name)
		if resp == nil {
			t.Fatalf("response %s missing", name)
		}
		if ext := resp.Extensions.GetOrZero("x-harness-extension"); ext == nil || ext.Value != "tenancy" {
			t.Errorf("%s is not marked x-harness-extension: tenancy", name)
		}
		if !strings.Contains(resp.Description, code) {
			t.Errorf("%s does not name its code %s", name, code)
		}
	}
	if model.Components.Responses.GetOrZero("TooManyRequests").Headers.GetOrZero("Retry-After") == nil {
		t.Error("429 does not declare Retry-After")
	}
}

func TestIdempotentReplayedHeader(t *testing.T) {
	_, model := loadModel(t)
	accepted := model.Paths.PathItems.GetOrZero("/v1/executions").Post.Responses.Codes.GetOrZero("202")
	if accepted.Headers.GetOrZero("Idempotent-Replayed") == nil {
		t.Fatal("startExecution 202 does not declare Idempotent-Replayed")
	}
}

// The 23 component schemas of the reference (and our Timestamp, shared by every date-time).
var referenceSchemas = []string{
	"ActionKind", "ActionRequest", "ActionResponse", "ArtifactList", "Artifact",
	"CancelExecutionRequest", "Conversation", "CreateArtifactInput", "CreateConversationRequest",
	"EventList", "ExecutionError", "Execution", "ExecutionState", "JsonObject", "JsonValue",
	"Problem", "ProviderManifest", "RuntimeDescription", "RuntimeEvent", "RuntimeTopology",
	"StandardEventType", "StartExecutionRequest", "SupportLevel",
}

func schemaNamed(t *testing.T, model *v3.Document, name string) *base.Schema {
	t.Helper()
	proxy := model.Components.Schemas.GetOrZero(name)
	if proxy == nil {
		t.Fatalf("schema %s missing", name)
	}
	return proxy.Schema()
}

func property(t *testing.T, s *base.Schema, name string) *base.Schema {
	t.Helper()
	p := s.Properties.GetOrZero(name)
	if p == nil {
		t.Fatalf("property %s missing", name)
	}
	return p.Schema()
}

func enumValues(s *base.Schema) []string {
	var out []string
	for _, n := range s.Enum {
		out = append(out, n.Value)
	}
	return out
}

func TestSchemaConstraints(t *testing.T) {
	_, model := loadModel(t)
	for _, name := range referenceSchemas {
		schemaNamed(t, model, name)
	}

	enums := map[string][]string{
		"ExecutionState":    {"queued", "starting", "running", "awaiting_input", "awaiting_approval", "cancelling", "succeeded", "failed", "cancelled"},
		"StandardEventType": {"run.queued", "run.started", "output.text.delta", "output.text.done", "action.required", "action.responded", "artifact.created", "provider.event", "run.completed", "run.failed", "run.cancelled"},
		"SupportLevel":      {"native", "emulated", "degraded", "unsupported"},
		"RuntimeTopology":   {"embedded", "subprocess", "remote"},
		"ActionKind":        {"approval", "input"},
	}
	for name, want := range enums {
		if got := enumValues(schemaNamed(t, model, name)); !slices.Equal(got, want) {
			t.Errorf("%s enum = %v, want %v", name, got, want)
		}
	}

	for _, name := range []string{"ProviderManifest", "RuntimeDescription"} {
		pv := property(t, schemaNamed(t, model, name), "protocolVersion")
		if pv.Const == nil || pv.Const.Value != "2026-09-02" {
			t.Errorf("%s.protocolVersion const = %v, want 2026-09-02", name, pv.Const)
		}
	}

	// minLength 1 on every identifier and name the reference requires non-empty.
	nonEmpty := map[string][]string{
		"StartExecutionRequest":  {"conversationId", "providerId", "idempotencyKey"},
		"Execution":              {"id", "conversationId", "providerId"},
		"ExecutionError":         {"code", "message"},
		"Conversation":           {"id"},
		"ActionRequest":          {"id", "executionId", "title"},
		"CreateArtifactInput":    {"id", "name", "mediaType", "uri"},
		"Artifact":               {"id", "executionId", "name", "mediaType", "uri"},
		"RuntimeEvent":           {"id", "executionId"},
		"ProviderManifest":       {"id", "name", "version"},
		"Problem":                {"code", "message"},
		"CancelExecutionRequest": {"reason"},
	}
	for schema, props := range nonEmpty {
		for _, p := range props {
			s := property(t, schemaNamed(t, model, schema), p)
			if s.MinLength == nil || *s.MinLength != 1 {
				t.Errorf("%s.%s minLength = %v, want 1", schema, p, s.MinLength)
			}
		}
	}
	maxLengths := map[string]int64{"StartExecutionRequest.idempotencyKey": 200, "CancelExecutionRequest.reason": 500}
	for path, want := range maxLengths {
		schema, prop, _ := strings.Cut(path, ".")
		s := property(t, schemaNamed(t, model, schema), prop)
		if s.MaxLength == nil || *s.MaxLength != want {
			t.Errorf("%s maxLength = %v, want %d", path, s.MaxLength, want)
		}
	}
	if s := property(t, schemaNamed(t, model, "StartExecutionRequest"), "input"); s.MinLength != nil {
		t.Errorf("input must allow the empty string, has minLength %d", *s.MinLength)
	}

	integers := map[string]float64{"RuntimeEvent.sequence": 1, "EventList.nextCursor": 0}
	for path, min := range integers {
		schema, prop, _ := strings.Cut(path, ".")
		s := property(t, schemaNamed(t, model, schema), prop)
		if !slices.Contains(s.Type, "integer") || s.Minimum == nil || *s.Minimum != min || s.Maximum == nil || *s.Maximum != maxSafeInteger {
			t.Errorf("%s = %v [%v, %v], want integer [%v, %d]", path, s.Type, s.Minimum, s.Maximum, min, maxSafeInteger)
		}
	}

	dates := map[string][]string{
		"Execution":     {"createdAt", "updatedAt", "startedAt", "endedAt"},
		"Conversation":  {"createdAt"},
		"ActionRequest": {"createdAt"},
		"Artifact":      {"createdAt"},
		"RuntimeEvent":  {"time"},
	}
	for schema, props := range dates {
		for _, p := range props {
			s := property(t, schemaNamed(t, model, schema), p)
			if s.Format != "date-time" {
				t.Errorf("%s.%s format = %q, want date-time", schema, p, s.Format)
			}
		}
	}

	required := map[string][]string{
		"Execution":             {"id", "conversationId", "providerId", "state", "input", "requiredCapabilities", "effectiveConfig", "createdAt", "updatedAt"},
		"RuntimeEvent":          {"id", "executionId", "sequence", "type", "time", "data"},
		"StartExecutionRequest": {"conversationId", "providerId", "input"},
		"Problem":               {"code", "message"},
		"ProviderManifest":      {"id", "name", "version", "protocolVersion", "topologies", "capabilities"},
		"ActionRequest":         {"id", "executionId", "kind", "title", "payload", "createdAt"},
		"Artifact":              {"id", "executionId", "name", "mediaType", "metadata", "createdAt"},
	}
	for schema, want := range required {
		got := schemaNamed(t, model, schema).Required
		if !slices.Equal(sortedCopy(got), sortedCopy(want)) {
			t.Errorf("%s required = %v, want %v", schema, got, want)
		}
	}
	if s := property(t, schemaNamed(t, model, "ProviderManifest"), "topologies"); s.MinItems == nil || *s.MinItems != 1 {
		t.Error("ProviderManifest.topologies must have minItems 1")
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// jsonValue turns a YAML example node into the value its JSON form decodes to.
func jsonValue(t *testing.T, n *yaml.Node) any {
	t.Helper()
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatalf("decode example: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("example is not JSON: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExamplesValidateAgainstTheirSchemas(t *testing.T) {
	_, model := loadModel(t)
	sv := schema_validation.NewSchemaValidator()
	validated := 0
	check := func(where string, schema *base.SchemaProxy, example *yaml.Node) {
		if schema == nil || example == nil {
			return
		}
		ok, errs := sv.ValidateSchemaObject(schema.Schema(), jsonValue(t, example))
		if !ok {
			for _, e := range errs {
				t.Errorf("%s: example invalid: %s %s", where, e.Message, e.Reason)
			}
		}
		validated++
	}
	for path, item := range model.Paths.PathItems.FromOldest() {
		for _, method := range []string{"GET", "POST"} {
			op := operationOf(item, method)
			if op == nil {
				continue
			}
			where := fmt.Sprintf("%s %s", method, path)
			if op.RequestBody != nil {
				for ct, media := range op.RequestBody.Content.FromOldest() {
					check(where+" request "+ct, media.Schema, media.Example)
					for name, ex := range media.Examples.FromOldest() {
						check(where+" request example "+name, media.Schema, ex.Value)
					}
				}
			}
			for code, resp := range op.Responses.Codes.FromOldest() {
				for ct, media := range resp.Content.FromOldest() {
					check(where+" "+code+" "+ct, media.Schema, media.Example)
					for name, ex := range media.Examples.FromOldest() {
						check(where+" "+code+" example "+name, media.Schema, ex.Value)
					}
				}
			}
		}
	}
	for name, resp := range model.Components.Responses.FromOldest() {
		for ct, media := range resp.Content.FromOldest() {
			check("response "+name+" "+ct, media.Schema, media.Example)
		}
	}
	check("ProviderManifest example", model.Components.Schemas.GetOrZero("ProviderManifest"), model.Components.Examples.GetOrZero("MockManifest").Value)
	t.Logf("%d examples validated", validated)
	if validated < 20 {
		t.Errorf("only %d examples validated; the document should carry examples for its main requests and responses", validated)
	}
}

// The boundary samples the reference's parity test feeds its schemas: each must be rejected.
func TestSchemasRejectBoundarySamples(t *testing.T) {
	_, model := loadModel(t)
	sv := schema_validation.NewSchemaValidator()
	execution := `{"id":"e","conversationId":"c","providerId":"mock","state":"queued","input":"","requiredCapabilities":[],"effectiveConfig":{},"createdAt":%q,"updatedAt":"2026-09-02T08:15:30.123Z"}`
	event := `{"id":"e:1","executionId":"e","sequence":%s,"type":%q,"time":"2026-09-02T08:15:30.123Z","data":{}}`
	cases := []struct {
		schema, json string
		valid        bool
	}{
		{"StartExecutionRequest", `{"conversationId":"c","providerId":"mock","input":""}`, true},
		{"StartExecutionRequest", `{"conversationId":"","providerId":"mock","input":"x"}`, false},
		{"StartExecutionRequest", `{"conversationId":"c","providerId":"mock","input":"x","idempotencyKey":"` + strings.Repeat("k", 201) + `"}`, false},
		{"StartExecutionRequest", `{"conversationId":"c","providerId":"mock","input":"x","idempotencyKey":"` + strings.Repeat("k", 200) + `"}`, true},
		{"StartExecutionRequest", `{"conversationId":"c","providerId":"mock","input":"x","requiredCapabilities":[""]}`, false},
		{"StartExecutionRequest", `{"conversationId":"c","providerId":"mock","input":"x","config":null}`, false},
		{"StartExecutionRequest", `{"providerId":"mock"}`, false},
		{"CancelExecutionRequest", `{"reason":""}`, false},
		{"CancelExecutionRequest", `{"reason":42}`, false},
		{"CancelExecutionRequest", `{"reason":"` + strings.Repeat("r", 501) + `"}`, false},
		{"CancelExecutionRequest", `{"reason":"` + strings.Repeat("r", 500) + `"}`, true},
		{"ActionResponse", `{"approved":"yes"}`, false},
		{"ActionResponse", `{"value":null}`, true},
		{"ActionResponse", `{"metadata":null}`, false},
		{"RuntimeEvent", fmt.Sprintf(event, "0", "run.queued"), false},
		{"RuntimeEvent", fmt.Sprintf(event, "1.5", "run.queued"), false},
		{"RuntimeEvent", fmt.Sprintf(event, "9007199254740992", "run.queued"), false},
		{"RuntimeEvent", fmt.Sprintf(event, "9007199254740991", "run.queued"), true},
		{"RuntimeEvent", fmt.Sprintf(event, "1", "run.unknown"), false},
		{"Execution", fmt.Sprintf(execution, "2026-09-02T08:15:30.123Z"), true},
		{"Execution", fmt.Sprintf(execution, "2026-10-09T00:00Z"), true},
		{"Execution", fmt.Sprintf(execution, "2026-09-02T08:15:30.123+08:00"), false},
		{"Execution", fmt.Sprintf(execution, "2026-13-02T08:15:30.123Z"), false},
		{"Execution", fmt.Sprintf(execution, "not a date"), false},
		{"ProviderManifest", `{"id":"m","name":"n","version":"1","protocolVersion":"2026-08-19","topologies":["embedded"],"capabilities":{}}`, false},
		{"ProviderManifest", `{"id":"m","name":"n","version":"1","protocolVersion":"2026-09-02","topologies":[],"capabilities":{}}`, false},
		{"ProviderManifest", `{"id":"m","name":"n","version":"1","protocolVersion":"2026-09-02","topologies":["embedded"],"capabilities":{"":"native"}}`, false},
		{"ProviderManifest", `{"id":"m","name":"n","version":"1","protocolVersion":"2026-09-02","topologies":["embedded"],"capabilities":{"x":"fully"}}`, false},
	}
	for _, c := range cases {
		ok, errs := sv.ValidateSchemaString(schemaNamed(t, model, c.schema), c.json)
		if ok != c.valid {
			t.Errorf("%s %s: valid = %v, want %v (%v)", c.schema, truncate(c.json), ok, c.valid, firstReason(errs))
		}
	}
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func firstReason(errs []*liberrors.ValidationError) string {
	if len(errs) == 0 {
		return "no error"
	}
	return errs[0].Reason
}

// TestExtensionsAreMarked: every operation the reference does not have says so, in
// x-harness-extension and in its description; no reference operation carries the mark.
func TestExtensionsAreMarked(t *testing.T) {
	_, model := loadModel(t)
	extensions := map[string]bool{
		"listExecutions": true, "listConversationExecutions": true,
		"getOpenAPIDocument": true, "getOpenAPIDocumentJSON": true,
		"listOrStreamConversationEvents": true, "listOrStreamTenantEvents": true,
		"listActions": true, "listActionRules": true, "createActionRule": true, "getActionRule": true,
		"revokeActionRule": true, "getUsage": true, "ready": true,
		"listConversations": true, "updateConversation": true, "deleteConversation": true,
	}
	for _, want := range operations {
		op := operationOf(model.Paths.PathItems.GetOrZero(want.path), want.method)
		node := op.Extensions.GetOrZero("x-harness-extension")
		// The mark is true, or the name of the extension the operation belongs to (usage, …).
		marked := node != nil && node.Value != "" && node.Value != "false"
		if marked != extensions[want.id] {
			t.Errorf("%s: x-harness-extension %v, want %v", want.id, marked, extensions[want.id])
		}
		if marked && !strings.Contains(op.Description, "**Extension**") {
			t.Errorf("%s: the description does not say it is an extension", want.id)
		}
	}
}
