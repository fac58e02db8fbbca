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
	allowReadPatch = "GET, HEAD, PATCH, DELETE" // a conversation: read, update and delete (extensions)
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

// route dispatches a request to its operation (the routes table), or answers 404/405.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	t := resolve(r.URL.EscapedPath())
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	post := r.Method == http.MethodPost
	patch := r.Method == http.MethodPatch
	del := r.Method == http.MethodDelete
	if err := checkTarget(r, t, read, post || patch, del); err != nil { // query.go: a PATCH takes no query either
		h.writeError(w, r, err)
		return
	}
	rt := &routes[t.res]
	switch {
	case read && rt.read != nil:
		rt.read(h, w, r, t)
	case post && rt.post != nil:
		rt.post(h, w, r, t)
	case patch && rt.patch != nil:
		rt.patch(h, w, r, t)
	case del && rt.delete != nil:
		rt.delete(h, w, r, t)
	case rt.allow == "":
		routeNotFound(w, r) // no such resource, or one that no method reaches
	default:
		methodNotAllowed(w, r, rt.allow)
	}
}

// route is what a resource serves: its operation for a read (GET, HEAD), a POST, a PATCH and a
// DELETE, the query parameters a read takes and those a DELETE takes (query.go), and the Allow
// header of its 405 for any other method ("" answers 404: the path names no resource a method
// reaches).
type route struct {
	read, post, patch, delete operation
	query, deleteQuery        []param
	allow                     string
}

// operation serves a request on a resolved target.
type operation func(h *Handler, w http.ResponseWriter, r *http.Request, t target)

// plain and byID adapt an operation that takes no path parameter, or the target's id.
func plain(op func(*Handler, http.ResponseWriter, *http.Request)) operation {
	return func(h *Handler, w http.ResponseWriter, r *http.Request, _ target) { op(h, w, r) }
}

func byID(op func(*Handler, http.ResponseWriter, *http.Request, string)) operation {
	return func(h *Handler, w http.ResponseWriter, r *http.Request, t target) { op(h, w, r, t.id) }
}

// routes is every resource's route, by resource. The POSTs on a custom method whose suffix is
// wrong or missing answer 400 after the body checks (the reference's quirk), not 404 or 405.
var routes = [...]route{
	resUnknown:      {},
	resHealth:       {read: plain((*Handler).health), allow: allowRead},
	resReady:        {read: plain((*Handler).ready), allow: allowRead},
	resRuntime:      {read: plain((*Handler).describeRuntime), allow: allowRead},
	resCapabilities: {read: plain((*Handler).listCapabilities), allow: allowRead},
	resConversations: {
		read: plain((*Handler).listConversations), post: plain((*Handler).createConversation),
		query: conversationListParams, allow: allowReadWrite,
	},
	resConversation: {
		read: byID((*Handler).getConversation), patch: byID((*Handler).updateConversation),
		delete: byID((*Handler).deleteConversation), deleteQuery: conversationDeleteParams,
		allow: allowReadPatch,
	},
	resConversationExecutions: {read: byID((*Handler).listExecutions), query: listingParams, allow: allowRead},
	resConversationEvents:     {read: byID((*Handler).conversationEvents), query: streamParams, allow: allowRead},
	resTenantEvents:           {read: plain((*Handler).tenantEvents), query: tenantStreamParams, allow: allowRead},
	resExecutions: {
		read:  func(h *Handler, w http.ResponseWriter, r *http.Request, _ target) { h.listExecutions(w, r, "") },
		post:  plain((*Handler).startExecution),
		query: listingParams, allow: allowReadWrite,
	},
	resExecution: {
		read: byID((*Handler).getExecution),
		// Any POST here is a cancel whose suffix is wrong.
		post: func(h *Handler, w http.ResponseWriter, r *http.Request, _ target) {
			h.cancelExecution(w, r, "", errSuffixInvalid())
		},
		allow: allowRead,
	},
	resCancel: {post: func(h *Handler, w http.ResponseWriter, r *http.Request, t target) {
		if t.id == "" {
			h.cancelExecution(w, r, "", errSuffixInvalid())
			return
		}
		h.cancelExecution(w, r, t.id, nil)
	}, allow: allowWrite},
	resArtifacts: {read: byID((*Handler).listArtifacts), allow: allowRead},
	resEvents:    {read: byID((*Handler).listOrStreamEvents), query: executionEventParams, allow: allowRead},
	resRespond: {post: func(h *Handler, w http.ResponseWriter, r *http.Request, t target) {
		if t.actionID == "" {
			h.respondToAction(w, r, t.id, "", errSuffixInvalid())
			return
		}
		h.respondToAction(w, r, t.id, t.actionID, nil)
	}, allow: allowWrite},
	// Only a POST reaches an action without its verb; any other method answers 404.
	resActionWithoutVerb: {post: func(h *Handler, w http.ResponseWriter, r *http.Request, t target) {
		h.respondToAction(w, r, t.id, "", errSuffixInvalid())
	}},
	resOpenAPIYAML: {read: plain((*Handler).openAPIYAML), allow: allowRead},
	resOpenAPIJSON: {read: plain((*Handler).openAPIJSON), allow: allowRead},
	resUsage:       {read: plain((*Handler).usage), query: usageParams, allow: allowRead},
	resActions:     {read: plain((*Handler).listActions), query: inboxParams, allow: allowRead},
	resActionRules: {
		read: plain((*Handler).listActionRules), post: plain((*Handler).createActionRule),
		query: ruleListParams, allow: allowReadWrite,
	},
	resActionRule: {read: byID((*Handler).getActionRule), allow: allowRead},
	resRevokeRule: {post: func(h *Handler, w http.ResponseWriter, r *http.Request, t target) {
		if t.id == "" {
			h.writeError(w, r, errSuffixInvalid())
			return
		}
		h.revokeActionRule(w, r, t.id)
	}, allow: allowWrite},
}
