package proxy

import (
	"net/http"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// healthBody is constant; the check depends on nothing, as in the reference.
var healthBody = []byte(`{"status":"ok"}`)

func (h *Handler) health(w http.ResponseWriter, _ *http.Request) {
	writeRawJSON(w, http.StatusOK, healthBody)
}

// readyBody answers /readyz while the node can serve.
var readyBody = []byte(`{"status":"ready"}`)

// ready is readiness (an extension, docs/operations.md): 200 while the runtime can take new
// work — its store answers and, on a shared store, it holds its lease — else 503 UNAVAILABLE,
// so a load balancer sends traffic elsewhere. /healthz stays liveness: the process answers.
func (h *Handler) ready(w http.ResponseWriter, r *http.Request) {
	if err := h.rt.Ready(r.Context()); err != nil {
		h.writeError(w, r, err)
		return
	}
	writeRawJSON(w, http.StatusOK, readyBody)
}

func (h *Handler) describeRuntime(w http.ResponseWriter, _ *http.Request) {
	desc := h.rt.Describe()
	if desc.Providers == nil {
		desc.Providers = []api.ProviderManifest{} // [] on the wire, never null
	}
	writeJSON(w, http.StatusOK, desc)
}

// capabilityList is the listCapabilities body. The generated client declares it as an
// anonymous struct; this one has the same single field.
type capabilityList struct {
	Providers []api.ProviderManifest `json:"providers"`
}

func (h *Handler) listCapabilities(w http.ResponseWriter, _ *http.Request) {
	providers := h.rt.Capabilities()
	if providers == nil {
		providers = []api.ProviderManifest{}
	}
	writeJSON(w, http.StatusOK, capabilityList{Providers: providers})
}
