package proxy

import "net/http"

func (h *Handler) createConversation(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	req, err := decodeConversationRequest(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	conv, err := h.rt.CreateConversationFrom(r.Context(), req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, conv)
}

func (h *Handler) getConversation(w http.ResponseWriter, r *http.Request, id string) {
	conv, err := h.rt.GetConversation(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, conv)
}
