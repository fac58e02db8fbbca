package proxy

import (
	"net/http"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// startExecution answers 202 for a new execution and for an idempotent replay alike (the
// reference does); a replay also carries `Idempotent-Replayed: true`. A client that prefers
// text/event-stream gets the execution's event stream instead (start_stream.go).
func (h *Handler) startExecution(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	req, err := decodeStartExecutionRequest(body, h.opts.MaxRequiredCapabilities)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	exec, replayed, err := h.rt.StartExecution(r.Context(), req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if prefersEventStream(r.Header) {
		h.streamStartedExecution(w, r, exec)
		return
	}
	writeJSON(w, http.StatusAccepted, exec)
}

func (h *Handler) getExecution(w http.ResponseWriter, r *http.Request, id string) {
	exec, err := h.rt.GetExecution(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, exec)
}

func (h *Handler) listArtifacts(w http.ResponseWriter, r *http.Request, id string) {
	artifacts, err := h.rt.ListArtifacts(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if artifacts == nil {
		artifacts = []api.Artifact{} // [] on the wire, never null
	}
	writeJSON(w, http.StatusOK, api.ArtifactList{Artifacts: artifacts})
}

// cancelExecution checks the body before anything else, then the path (pathErr: the suffix
// was missing or had nothing before it), then the execution: the reference's order, which
// makes an invalid body on an unknown execution a 400, not a 404.
func (h *Handler) cancelExecution(w http.ResponseWriter, r *http.Request, id string, pathErr error) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	reason, err := decodeCancelRequest(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if pathErr != nil {
		h.writeError(w, r, pathErr)
		return
	}
	exec, err := h.rt.CancelExecution(r.Context(), id, reason)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, exec)
}

// respondToAction checks, in the reference's order: the body is present and is JSON, the path
// (pathErr), then — inside the runtime — the execution, the action and the state, and only
// then the body's shape, through the decode callback. So an invalid answer to an action that
// was already resolved is a 409, and an invalid answer to a pending action is a 400 that
// leaves it pending.
func (h *Handler) respondToAction(w http.ResponseWriter, r *http.Request, executionID, actionID string, pathErr error) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	resp, bodyErr, shapeErr := decodeActionResponse(body)
	if bodyErr != nil {
		h.writeError(w, r, bodyErr)
		return
	}
	if pathErr != nil {
		h.writeError(w, r, pathErr)
		return
	}
	exec, err := h.rt.RespondToAction(r.Context(), executionID, actionID, func() (api.ActionResponse, error) {
		if shapeErr != nil {
			return api.ActionResponse{}, shapeErr
		}
		return resp, nil
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, exec)
}
