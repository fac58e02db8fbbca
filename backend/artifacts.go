package backend

import (
	"context"
	"encoding/json"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// artifactInputFromData reads a CreateArtifactInput out of Emit's generic data, strictly: the
// required strings must be non-empty strings, uri (when present) a non-empty string, metadata
// (when present) an object — null is not "absent" (docs/protocol.md §1.4, §9). Unknown fields
// are dropped.
func artifactInputFromData(data api.JSONObject) (api.CreateArtifactInput, error) {
	invalid := providerError(msgInvalidArtifact)
	m, err := normalizeObject(data)
	if err != nil {
		return api.CreateArtifactInput{}, invalid
	}
	str := func(key string) (string, bool) {
		s, ok := m[key].(string)
		return s, ok && s != ""
	}
	var in api.CreateArtifactInput
	var ok bool
	if in.ID, ok = str("id"); !ok {
		return api.CreateArtifactInput{}, invalid
	}
	if in.Name, ok = str("name"); !ok {
		return api.CreateArtifactInput{}, invalid
	}
	if in.MediaType, ok = str("mediaType"); !ok {
		return api.CreateArtifactInput{}, invalid
	}
	if _, present := m["uri"]; present {
		uri, ok := str("uri")
		if !ok {
			return api.CreateArtifactInput{}, invalid
		}
		in.URI = &uri
	}
	if raw, present := m["metadata"]; present {
		meta, ok := raw.(map[string]any)
		if !ok {
			return api.CreateArtifactInput{}, invalid
		}
		in.Metadata = &meta
	}
	return in, nil
}

// emitArtifact validates and stores an artifact and appends artifact.created whose data is the
// stored Artifact itself, so listing and event data are byte-for-byte the same encoding.
func (x *execution) emitArtifact(checkpoint []byte, in api.CreateArtifactInput) error {
	if in.ID == "" || in.Name == "" || in.MediaType == "" || (in.URI != nil && *in.URI == "") {
		return providerError(msgInvalidArtifact)
	}
	var metadata api.JSONObject
	if in.Metadata != nil {
		if *in.Metadata == nil {
			return providerError(msgInvalidArtifact)
		}
		metadata = *in.Metadata
	}
	metadata, err := normalizeObject(metadata)
	if err != nil {
		return providerError(msgInvalidArtifact)
	}

	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if isTerminalState(x.state()) {
		return nil
	}
	if _, dup := x.artifactIDs[in.ID]; dup {
		return newError(CodeProviderError, msgDuplicateArtifact, in.ID)
	}
	at := now()
	artifact := api.Artifact{
		ID:          in.ID,
		ExecutionID: x.id,
		Name:        in.Name,
		MediaType:   in.MediaType,
		URI:         clonePtr(in.URI),
		Metadata:    metadata,
		CreatedAt:   at,
	}
	data, err := json.Marshal(artifact)
	if err != nil {
		return providerError(msgInvalidArtifact)
	}
	if len(data) > x.rt.opts.MaxEventDataBytes {
		return newError(CodeProviderError, msgEventDataTooLarge, x.rt.opts.MaxEventDataBytes)
	}
	err = x.enqueue(change{
		at:         at,
		events:     []newEvent{{typ: api.StandardEventTypeArtifactCreated, data: data}},
		artifacts:  []store.Artifact{{Index: len(x.artifactIDs), Artifact: artifact}},
		byProvider: true,
		checkpoint: checkpoint,
	})
	if err != nil {
		return x.refuseOverLimit(err)
	}
	x.artifactIDs[in.ID] = struct{}{}
	return nil
}

// ListArtifacts returns the execution's artifacts in creation order ([] when none).
func (r *Runtime) ListArtifacts(ctx context.Context, id string) ([]api.Artifact, error) {
	if _, err := r.openHandle(ctx, id); err != nil { // committed artifacts, wherever it runs
		return nil, err
	}
	artifacts, err := r.store.Artifacts(id)
	if err != nil {
		return nil, internalError("read artifacts", err)
	}
	return artifacts, nil
}
