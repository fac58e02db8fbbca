package a2a

import (
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Parts come in the SDK's A2A 1.0 shape whichever version the agent speaks: text, data, a file
// by URL, or a file's raw bytes (an A2A 0.3 file part is one of the last two), each with an
// optional filename and media type.

// emitPart relays one part of an agent message: text as output.text.delta, anything else as a
// provider.event describing it (file bytes are not copied: the protocol stores no bytes).
func emitPart(run *backend.Run, m *a2a.Message, part *a2a.Part) error {
	if part == nil {
		return nil
	}
	switch c := part.Content.(type) {
	case a2a.Text:
		if c == "" {
			return nil
		}
		return run.EmitText(string(c))
	case a2a.Data:
		return run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
			"type": "a2a.part", "kind": "data", "messageId": m.ID, "data": c.Value,
		})
	case a2a.URL, a2a.Raw:
		return run.Emit(api.StandardEventTypeProviderEvent, api.JSONObject{
			"type": "a2a.part", "kind": "file", "messageId": m.ID, "file": describeFile(part),
		})
	}
	return nil
}

func describeFile(p *a2a.Part) api.JSONObject {
	out := api.JSONObject{}
	switch c := p.Content.(type) {
	case a2a.URL:
		out["uri"] = string(c)
	case a2a.Raw:
		out["bytesOmitted"] = true
	}
	if p.Filename != "" {
		out["name"] = p.Filename
	}
	if p.MediaType != "" {
		out["mimeType"] = p.MediaType
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
		if part != nil {
			b.WriteString(part.Text())
		}
	}
	return b.String()
}

// partKind names a part's content as A2A 0.3 did ("text", "data", "file"): the artifact
// metadata's vocabulary, the same for agents of either version.
func partKind(p *a2a.Part) string {
	switch p.Content.(type) {
	case a2a.Text:
		return "text"
	case a2a.Data:
		return "data"
	case a2a.URL, a2a.Raw:
		return "file"
	}
	return ""
}

// defaultMediaType is a part's media type when it names none: text and data have one by nature.
func defaultMediaType(p *a2a.Part) string {
	switch p.Content.(type) {
	case a2a.Text:
		return "text/plain"
	case a2a.Data:
		return "application/json"
	}
	return ""
}

// artifactDescriptor is an A2A artifact as a local artifact descriptor: the A2A artifact id, a
// name, the media type of its first part, the URI of its first file part given by URI, and what
// it holds as metadata. No bytes are stored (docs/protocol.md §9): callers read the content from
// the agent (GetTask) by the task and artifact ids in the metadata.
func artifactDescriptor(taskID a2a.TaskID, a *a2a.Artifact) api.CreateArtifactInput {
	name := a.Name
	if name == "" {
		name = string(a.ID)
	}
	mediaType := "application/octet-stream"
	var uri *string
	parts := make([]any, 0, len(a.Parts))
	for i, part := range a.Parts {
		if part == nil {
			continue
		}
		mt := part.MediaType
		if mt == "" {
			mt = defaultMediaType(part)
		}
		if i == 0 && mt != "" {
			mediaType = mt
		}
		if u, ok := part.Content.(a2a.URL); ok && uri == nil && u != "" {
			s := string(u)
			uri = &s
		}
		parts = append(parts, map[string]any{"kind": partKind(part)})
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
		return a2a.ContentParts{a2a.NewTextPart("")}
	}
	switch v := (*r.Value).(type) {
	case string:
		return a2a.ContentParts{a2a.NewTextPart(v)}
	case map[string]any:
		return a2a.ContentParts{a2a.NewDataPart(v)}
	}
	raw, _ := jsonText(*r.Value)
	return a2a.ContentParts{a2a.NewTextPart(raw)}
}
