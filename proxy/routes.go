package proxy

import (
	"net/http"
	"net/url"
	"strings"
)

// Routing is done by hand rather than with http.ServeMux: the protocol's custom methods put a
// literal suffix after a wildcard (`{id}:cancel`), which ServeMux rejects with a panic, and the
// reference's quirks (a POST on `/v1/executions/{x}` without the suffix is a 400, not a 404)
// need the segment to be inspected anyway.
//
// The path is split on the raw '/' of r.URL.EscapedPath() and each segment is percent-decoded
// afterwards, so an encoded slash (%2F) stays inside an id and an encoded colon (%3A) counts as a
// colon, as the reference's framework does.
//
// An id never reaches the wrong operation: the last segment of /v1/executions/{x} is the cancel
// resource when it ends in ":cancel" (encoded or not), so `GET /v1/executions/a:cancel` answers
// 405 with `Allow: POST`; it is never getExecution("a:cancel"). Any other id, colons included, is
// looked up as given and answers 404 NOT_FOUND when unknown.

// resource is what a path names, before the method is considered.
type resource int

const (
	resUnknown resource = iota
	resHealth
	resReady // /readyz (extension): readiness, where /healthz is liveness
	resRuntime
	resCapabilities
	resConversations
	resConversation
	resConversationExecutions // /v1/conversations/{id}/executions (listing extension)
	resConversationEvents     // /v1/conversations/{id}/events (streams extension)
	resTenantEvents           // /v1/events (streams extension)
	resExecutions
	resExecution         // /v1/executions/{id}
	resCancel            // /v1/executions/{id}:cancel
	resArtifacts         // /v1/executions/{id}/artifacts
	resEvents            // /v1/executions/{id}/events
	resRespond           // /v1/executions/{id}/actions/{actionId}:respond
	resActionWithoutVerb // /v1/executions/{id}/actions/{y}, y without ":respond"
	resOpenAPIYAML       // /v1/openapi.yaml (extension)
	resOpenAPIJSON       // /v1/openapi.json (extension)
	resUsage             // /v1/usage (extension)
	resActions           // /v1/actions (the inbox, extension: approvals.go)
	resActionRules       // /v1/action-rules (extension)
	resActionRule        // /v1/action-rules/{id}
	resRevokeRule        // /v1/action-rules/{id}:revoke
)

const (
	cancelSuffix  = ":cancel"
	respondSuffix = ":respond"

	allowRead      = "GET, HEAD"
	allowWrite     = "POST"
	allowReadWrite = "GET, HEAD, POST"
)

// target is a resolved path: the resource and its decoded parameters.
type target struct {
	res      resource
	id       string // conversation or execution id
	actionID string
}

// maxSegments is the depth of the deepest route (v1/executions/{id}/actions/{actionId}:respond).
const maxSegments = 5

// resolve maps an escaped request path to the resource it names. It allocates only for the
// decoded segments that contain a percent sign.
func resolve(escapedPath string) target {
	var segs [maxSegments]string
	n, ok := splitPath(escapedPath, &segs)
	if !ok {
		return target{}
	}
	if n == 1 && segs[0] == "healthz" {
		return target{res: resHealth}
	}
	if n == 1 && segs[0] == "readyz" {
		return target{res: resReady}
	}
	if n < 2 || segs[0] != "v1" {
		return target{}
	}
	switch n {
	case 2:
		switch segs[1] {
		case "runtime":
			return target{res: resRuntime}
		case "conversations":
			return target{res: resConversations}
		case "executions":
			return target{res: resExecutions}
		case "openapi.yaml":
			return target{res: resOpenAPIYAML}
		case "openapi.json":
			return target{res: resOpenAPIJSON}
		case "usage":
			return target{res: resUsage}
		case "actions":
			return target{res: resActions}
		case "action-rules":
			return target{res: resActionRules}
		case "events":
			return target{res: resTenantEvents}
		}
	case 3:
		switch {
		case segs[1] == "runtime" && segs[2] == "capabilities":
			return target{res: resCapabilities}
		case segs[1] == "conversations" && segs[2] != "":
			return target{res: resConversation, id: segs[2]}
		case segs[1] == "action-rules" && segs[2] != "":
			if id, ok := strings.CutSuffix(segs[2], revokeSuffix); ok {
				return target{res: resRevokeRule, id: id}
			}
			return target{res: resActionRule, id: segs[2]}
		case segs[1] == "executions":
			if id, ok := strings.CutSuffix(segs[2], cancelSuffix); ok {
				return target{res: resCancel, id: id}
			}
			if segs[2] != "" {
				return target{res: resExecution, id: segs[2]}
			}
		}
	case 4:
		if segs[1] == "conversations" && segs[2] != "" && segs[3] == "executions" {
			return target{res: resConversationExecutions, id: segs[2]}
		}
		if segs[1] == "conversations" && segs[2] != "" && segs[3] == "events" {
			return target{res: resConversationEvents, id: segs[2]}
		}
		if segs[1] != "executions" || segs[2] == "" {
			break
		}
		switch segs[3] {
		case "artifacts":
			return target{res: resArtifacts, id: segs[2]}
		case "events":
			return target{res: resEvents, id: segs[2]}
		}
	case 5:
		if segs[1] != "executions" || segs[2] == "" || segs[3] != "actions" {
			break
		}
		if actionID, ok := strings.CutSuffix(segs[4], respondSuffix); ok {
			return target{res: resRespond, id: segs[2], actionID: actionID}
		}
		if segs[4] != "" {
			return target{res: resActionWithoutVerb, id: segs[2]}
		}
	}
	return target{}
}

// splitPath splits "/a/b%2Fc" into decoded segments ["a", "b/c"]. It fails for a path that does
// not start with '/', has more segments than any route, or holds an invalid escape.
func splitPath(escapedPath string, segs *[maxSegments]string) (int, bool) {
	rest, ok := strings.CutPrefix(escapedPath, "/")
	if !ok {
		return 0, false
	}
	n := 0
	for {
		if n == maxSegments {
			return 0, false
		}
		seg, tail, more := strings.Cut(rest, "/")
		if strings.IndexByte(seg, '%') >= 0 {
			decoded, err := url.PathUnescape(seg)
			if err != nil {
				return 0, false
			}
			seg = decoded
		}
		segs[n] = seg
		n++
		if !more {
			return n, true
		}
		rest = tail
	}
}

// Handles reports whether a path belongs to the protocol: /healthz, /readyz, /v1 and everything
// under /v1/. The Caddy module passes every other request to the next handler.
func Handles(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/v1" || strings.HasPrefix(path, "/v1/")
}

// route dispatches a request to its operation, or answers 404/405.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	t := resolve(r.URL.EscapedPath())
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	post := r.Method == http.MethodPost
	if err := checkTarget(r, t, read, post); err != nil { // query.go
		h.writeError(w, r, err)
		return
	}

	switch t.res {
	case resHealth:
		if read {
			h.health(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resReady:
		if read {
			h.ready(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resRuntime:
		if read {
			h.describeRuntime(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resCapabilities:
		if read {
			h.listCapabilities(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resConversations:
		if post {
			h.createConversation(w, r)
			return
		}
		methodNotAllowed(w, r, allowWrite)
	case resConversation:
		if read {
			h.getConversation(w, r, t.id)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resConversationExecutions:
		if read {
			h.listExecutions(w, r, t.id)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resConversationEvents:
		if read {
			h.conversationEvents(w, r, t.id)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resTenantEvents:
		if read {
			h.tenantEvents(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resExecutions:
		switch {
		case post:
			h.startExecution(w, r)
		case read:
			h.listExecutions(w, r, "")
		default:
			methodNotAllowed(w, r, allowReadWrite)
		}
	case resUsage:
		if read {
			h.usage(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resOpenAPIYAML:
		if read {
			h.openAPIYAML(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resOpenAPIJSON:
		if read {
			h.openAPIJSON(w, r)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resExecution:
		switch {
		case read:
			h.getExecution(w, r, t.id)
		case post:
			// The reference treats any POST here as a cancel whose suffix is wrong: 400 after
			// the body checks, not 404 or 405.
			h.cancelExecution(w, r, "", errSuffixInvalid())
		default:
			methodNotAllowed(w, r, allowRead)
		}
	case resCancel:
		if !post {
			methodNotAllowed(w, r, allowWrite)
			return
		}
		if t.id == "" {
			h.cancelExecution(w, r, "", errSuffixInvalid())
			return
		}
		h.cancelExecution(w, r, t.id, nil)
	case resArtifacts:
		if read {
			h.listArtifacts(w, r, t.id)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resEvents:
		if read {
			h.listOrStreamEvents(w, r, t.id)
			return
		}
		methodNotAllowed(w, r, allowRead)
	case resRespond:
		if !post {
			methodNotAllowed(w, r, allowWrite)
			return
		}
		if t.actionID == "" {
			h.respondToAction(w, r, t.id, "", errSuffixInvalid())
			return
		}
		h.respondToAction(w, r, t.id, t.actionID, nil)
	case resActionWithoutVerb:
		if post {
			h.respondToAction(w, r, t.id, "", errSuffixInvalid())
			return
		}
		routeNotFound(w, r)
	case resActions, resActionRules, resActionRule, resRevokeRule:
		h.routeApprovals(w, r, t, read, post)
	default:
		routeNotFound(w, r)
	}
}
