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
