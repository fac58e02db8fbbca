package proxy

import (
	"net/http"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// NotFound answers 404 NOT_FOUND for a path outside the protocol (/healthz, /v1, /v1/…), in the
// same envelope as an unknown /v1 route, and says where the API and its description are. The
// Caddy module answers with it when nothing else in the route answered the request.
func NotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, problem{
		status: http.StatusNotFound,
		body: api.Problem{
			Code: string(backend.CodeNotFound),
			Message: "Route not found: " + r.Method + " " + r.URL.EscapedPath() +
				" (this server answers the Harness Runtime API under /v1; its OpenAPI document is GET /v1/openapi.yaml)",
		},
	})
}
