package a2a

import (
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// emitPart relays one part of an agent message: text as output.text.delta, anything else as a
// provider.event describing it (file bytes are not copied: the protocol stores no bytes).
func emitPart(run *backend.Run, m *a2a.Message, part a2a.Part) error {
	switch p := part.(type) {
	case a2a.TextPart:
		if p.Text == "" {
			return nil
		}
		return run.EmitText(p.Text)
	case a2a.DataPart:
		return run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
			"type": "a2a.part", "kind": "data", "messageId": m.ID, "data": p.Data,
		})
	case a2a.FilePart:
		return run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
			"type": "a2a.part", "kind": "file", "messageId": m.ID, "file": describeFile(p),
		})
	}
	return nil
}

func describeFile(p a2a.FilePart) api.JSONObject {
	out := api.JSONObject{}
	var meta a2a.FileMeta
	switch f := p.File.(type) {
	case a2a.FileURI:
		meta, out["uri"] = f.FileMeta, f.URI
	case a2a.FileBytes:
		meta, out["bytesOmitted"] = f.FileMeta, true
	}
	if meta.Name != "" {
		out["name"] = meta.Name
	}
	if meta.MimeType != "" {
		out["mimeType"] = meta.MimeType
	}
	return out
}

// messageText is the text of a message's text parts, concatenated.
func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, part := range m.Parts {
		if p, ok := part.(a2a.TextPart); ok {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// artifactDescriptor is an A2A artifact as a local artifact descriptor: the A2A artifact id, a
// name, the media type of its first part, the URI of its first file part given by URI, and what
// it holds as metadata. No bytes are stored (docs/protocol.md §9): callers read the content from
// the agent (tasks/get) by the task and artifact ids in the metadata.
func artifactDescriptor(taskID a2a.TaskID, a *a2a.Artifact) api.CreateArtifactInput {
	name := a.Name
	if name == "" {
		name = string(a.ID)
	}
	mediaType := "application/octet-stream"
	var uri *string
	parts := make([]any, 0, len(a.Parts))
	for i, part := range a.Parts {
		var kind, mt string
		switch p := part.(type) {
		case a2a.TextPart:
			kind, mt = "text", "text/plain"
		case a2a.DataPart:
			kind, mt = "data", "application/json"
		case a2a.FilePart:
			kind = "file"
			switch f := p.File.(type) {
			case a2a.FileURI:
				mt = f.MimeType
				if uri == nil && f.URI != "" {
					u := f.URI
					uri = &u
				}
			case a2a.FileBytes:
				mt = f.MimeType
			}
		}
		if i == 0 && mt != "" {
			mediaType = mt
		}
		parts = append(parts, map[string]any{"kind": kind})
	}
	metadata := api.JSONObject{"a2aTaskId": string(taskID), "a2aArtifactId": string(a.ID), "parts": parts}
	if a.Description != "" {
		metadata["description"] = a.Description
	}
	if len(a.Metadata) > 0 {
		metadata["a2aMetadata"] = a.Metadata
	}
	return api.CreateArtifactInput{ID: string(a.ID), Name: name, MediaType: mediaType, URI: uri, Metadata: &metadata}
}

// answerParts turns a caller's answer into the parts of the message that carries it: a string
// value as text, an object as a data part, anything else as its JSON text.
func answerParts(r api.ActionResponse) a2a.ContentParts {
	if r.Value == nil {
		return a2a.ContentParts{a2a.TextPart{Text: ""}}
	}
	switch v := (*r.Value).(type) {
	case string:
		return a2a.ContentParts{a2a.TextPart{Text: v}}
	case map[string]any:
		return a2a.ContentParts{a2a.DataPart{Data: v}}
	}
	raw, _ := jsonText(*r.Value)
	return a2a.ContentParts{a2a.TextPart{Text: raw}}
}
