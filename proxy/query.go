package proxy

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/harness-edge/harness-edge/backend"
)

// Every route's query is checked against one table (queryParams) before its handler runs
// (docs/protocol.md §2.1, "Query parameters"): a name the route does not take, a value that is
// empty or repeated where the documents do not say what that means, or a NUL anywhere answers
// 400 VALIDATION_ERROR naming the parameter. A misspelt filter (`?stat=pending`) or an empty one
// (`?state=`) would otherwise widen a list silently. The handlers then parse the values they
// take (their syntax and range are theirs); this table only says which names, and how often.
//
// The reference ignores unknown parameters; a reference client sends none, so it is not hurt.

// param is one query parameter a route takes.
type param struct {
	name string
	// message is the route's own message for this parameter ("" → msgInvalidQuery), so that a
	// repeated `after` on the reference's events route keeps the reference's message.
	message string
	// repeatable: the documents define repetition (the values add up, as `state=a&state=b`).
	repeatable bool
	// empty: the documents define an empty value (`after=` is the start, `state=` no item).
	empty bool
}

const (
	msgUnknownParameter = "Unknown query parameter"
	msgInvalidQuery     = "Invalid query parameter"
	msgInvalidPathID    = "Path parameter must not contain NUL"
	reasonNUL           = "must not contain NUL (U+0000)"
)

var (
	listingParams = []param{
		{name: "state", message: backend.ErrListState.Message, repeatable: true, empty: true},
		{name: "after", message: backend.ErrListAfter.Message, empty: true},
		{name: "limit", message: backend.ErrListLimit.Message},
	}
	executionEventParams = []param{
		{name: "after", message: msgInvalidAfter, empty: true},
		{name: "limit", message: msgInvalidLimit, empty: true}, // empty: no limit (tested since §5.3's limit)
	}
	streamParams = []param{
		{name: "after", message: msgStreamAfter},
		{name: "limit", message: msgInvalidLimit},
		{name: "type", message: msgInvalidType, repeatable: true},
		{name: "lifecycle", message: msgInvalidLifecycle, empty: true},
		{name: "provider", message: msgInvalidProvider, repeatable: true},
	}
	tenantStreamParams = append(append([]param{}, streamParams...),
		param{name: "conversation", message: msgInvalidStreamConv})
	inboxParams = []param{
		{name: "state", message: msgInboxState},
		{name: "providerId", message: "Invalid providerId"},
		{name: "conversationId", message: "Invalid conversationId"},
		{name: "after", message: backend.ErrListAfter.Message, empty: true},
		{name: "limit", message: backend.ErrListLimit.Message},
	}
	ruleListParams = []param{{name: "conversationId", message: "Invalid conversationId"},
		{name: "active", message: msgInvalidActive}}
	usageParams = []param{{name: "from", message: msgUsageTime}, {name: "to", message: msgUsageTime},
		{name: "groupBy", message: backend.ErrUsageGroupBy.Message}, {name: "limit", message: backend.ErrUsageLimit.Message}}
)

// queryParams is what a resource takes for a read (GET, HEAD: its route's query, routes.go) or
// a write (POST: nothing); ok is false for any other method, which the router answers 405 (the
// query is not looked at then).
func queryParams(res resource, read, post, del bool) (params []param, ok bool) {
	switch {
	case read:
		return routes[res].query, true
	case del:
		return routes[res].deleteQuery, routes[res].delete != nil
	}
	return nil, post
}

// checkTarget refuses a request whose path or query breaks the rules above: a NUL in an id of
// the path (PostgreSQL's text cannot hold one, and no id has one), then the query.
func checkTarget(r *http.Request, t target, read, post, del bool) error {
	if strings.IndexByte(t.id, 0) >= 0 {
		return invalidParameter(msgInvalidPathID, "id", reasonNUL)
	}
	if strings.IndexByte(t.actionID, 0) >= 0 {
		return invalidParameter(msgInvalidPathID, "actionId", reasonNUL)
	}
	if t.res == resUnknown || t.res == resHealth || t.res == resReady {
		return nil // a probe answers whatever its URL carries: a cache-buster must not mark a node down
	}
	params, ok := queryParams(t.res, read, post, del)
	if !ok {
		return nil
	}
	return checkQuery(r.URL.RawQuery, params)
}

// checkQuery checks a raw query against params, pair by pair in the order sent.
func checkQuery(rawQuery string, params []param) error {
	var seen []string
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		if pair == "" {
			continue // `a=1&&b=2`: url.ParseQuery skips it too
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return invalidParameter(msgInvalidQuery, strings.ToValidUTF8(rawKey, "�"), "not application/x-www-form-urlencoded")
		}
		p, known := paramNamed(params, key)
		if !known {
			return unknownParameter(key, params)
		}
		message := p.message
		if message == "" {
			message = msgInvalidQuery + ": " + p.name
		}
		value, err := url.QueryUnescape(rawValue)
		switch {
		case err != nil:
			continue // the route's own parser refuses it, with its reason
		case strings.IndexByte(value, 0) >= 0:
			return invalidParameter(message, p.name, reasonNUL)
		case value == "" && !p.empty:
			return invalidParameter(message, p.name, "must not be empty")
		}
		if !p.repeatable {
			for _, s := range seen {
				if s == p.name {
					return invalidParameter(message, p.name, "must be given once")
				}
			}
			seen = append(seen, p.name)
		}
	}
	return nil
}

func paramNamed(params []param, name string) (param, bool) {
	for _, p := range params {
		if p.name == name {
			return p, true
		}
	}
	return param{}, false
}

// unknownParameter names the parameter, what the route takes and the likely meant one.
func unknownParameter(name string, params []param) error {
	shown := strings.ToValidUTF8(strings.ReplaceAll(name, "\x00", "\\0"), "�")
	if shown == "" {
		shown = "(empty name)"
	}
	if len(params) == 0 {
		return invalidParameter(msgUnknownParameter+": "+shown, shown, "this route takes no query parameter")
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	reason := "not a parameter of this route; it takes " + strings.Join(names, ", ")
	if s := closestName(name, names); s != "" {
		reason += "; did you mean " + s + "?"
	}
	return invalidParameter(msgUnknownParameter+": "+shown, shown, reason)
}
