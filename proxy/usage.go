package proxy

import (
	"errors"
	"net/http"
	"time"

	"github.com/harness-edge/harness-edge/backend"
)

// usage serves GET /v1/usage (extension, docs/usage.md): the caller's tenant's usage over
// [from, to), grouped by provider, conversation or day. Parameters are parsed here; the
// runtime checks the range, the grouping and the limit, and the refusal names its parameter.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request) {
	q, err := usageQuery(r.URL.RawQuery, time.Now())
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	report, err := h.rt.Usage(r.Context(), q)
	if err != nil {
		h.writeError(w, r, usageParameterError(err))
		return
	}
	writeJSON(w, http.StatusOK, report)
}

// usageQuery reads from (default: the start of now's UTC day), to (default: now), groupBy and
// limit.
func usageQuery(rawQuery string, now time.Time) (backend.UsageQuery, error) {
	q := backend.UsageQuery{From: now.UTC().Truncate(24 * time.Hour), To: now}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		v, _, ok := queryParam(rawQuery, p.name)
		if !ok {
			return q, invalidParameter(msgUsageTime, p.name, "not a valid query value")
		}
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return q, invalidParameter(msgUsageTime, p.name, "not an RFC 3339 timestamp")
		}
		*p.dst = t
	}
	groupBy, _, ok := queryParam(rawQuery, "groupBy")
	if !ok {
		return q, invalidParameter(backend.ErrUsageGroupBy.Message, "groupBy", "not a valid query value")
	}
	q.GroupBy = groupBy
	limit, _, ok := queryParam(rawQuery, "limit")
	if !ok {
		return q, invalidParameter(backend.ErrUsageLimit.Message, "limit", "not a valid query value")
	}
	if limit != "" {
		n, ok := parseLimit(limit)
		if !ok || n < 1 || n > backend.MaxUsageGroups {
			return q, invalidParameter(backend.ErrUsageLimit.Message, "limit", "must be an integer from 1 to 1000")
		}
		q.Limit = n
	}
	return q, nil
}

const msgUsageTime = "from and to must be RFC 3339 timestamps"

// usageParameterError names the parameter of a query the runtime refused.
func usageParameterError(err error) error {
	switch {
	case errors.Is(err, backend.ErrUsageRange):
		return invalidParameter(backend.ErrUsageRange.Message, "from", "must be before to, at most 366 days apart")
	case errors.Is(err, backend.ErrUsageGroupBy):
		return invalidParameter(backend.ErrUsageGroupBy.Message, "groupBy", "unknown grouping")
	case errors.Is(err, backend.ErrUsageLimit):
		return invalidParameter(backend.ErrUsageLimit.Message, "limit", "must be an integer from 1 to 1000")
	}
	return err
}
