package backend

import (
	"context"
	"log/slog"
)

// executionLogHandler gives every log line of the runtime about an execution the fields an
// operator joins logs and traces by: execution_id (the "execution" attribute the log calls
// name it by), tenant and trace_id (of the execution's span, when it is traced). Both are
// looked up among the executions this process runs (logFields): a log line about a finished
// execution keeps only its id.
type executionLogHandler struct {
	next   slog.Handler
	lookup func(id string) (tenant, traceID string, ok bool)
}

// ExecutionLogHandler returns next with the same treatment for loggers the runtime does not
// own (providers', webhooks'), which a program builds before its runtime: lookup finds the
// fields (Runtime.ExecutionLogFields of whichever runtime runs the execution).
func ExecutionLogHandler(next slog.Handler, lookup func(id string) (tenant, traceID string, ok bool)) slog.Handler {
	return executionLogHandler{next: next, lookup: lookup}
}

// ExecutionLogFields are the tenant and trace id of an execution this runtime runs; ok is
// false for any other (finished, unknown, another node's).
func (r *Runtime) ExecutionLogFields(id string) (tenant, traceID string, ok bool) {
	return r.logFields(id)
}

func (h executionLogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h executionLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return executionLogHandler{next: h.next.WithAttrs(attrs), lookup: h.lookup}
}

func (h executionLogHandler) WithGroup(name string) slog.Handler {
	return executionLogHandler{next: h.next.WithGroup(name), lookup: h.lookup}
}

func (h executionLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	var id string
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "execution" && a.Value.Kind() == slog.KindString {
			id = a.Value.String()
			return false
		}
		return true
	})
	if id == "" {
		return h.next.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, rec.Message, rec.PC)
	out.AddAttrs(slog.String("execution_id", id))
	if tenant, traceID, ok := h.lookup(id); ok {
		out.AddAttrs(slog.String("tenant", tenant))
		if traceID != "" {
			out.AddAttrs(slog.String("trace_id", traceID))
		}
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key != "execution" {
			out.AddAttrs(a)
		}
		return true
	})
	return h.next.Handle(ctx, out)
}

// logFields are an execution's tenant and trace id, while this process runs it: from its start
// (runningSlots holds it before the live map does, so a provider failing at once is found)
// until it finished. Log calls may hold the execution's locks: the tenant is read from what never changes.
func (r *Runtime) logFields(id string) (tenant, traceID string, ok bool) {
	x := r.live.get(id)
	if x == nil {
		x = r.running.find(id)
	}
	if x == nil {
		return "", "", false
	}
	return x.tenantID, x.traceID(), true
}

// find returns the execution id holds a slot, nil when none. It looks through every tenant's
// slots: it serves log lines, which are rare.
func (s *runningSlots) find(id string) *execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, held := range s.byTenant {
		if x := held[id]; x != nil {
			return x
		}
	}
	return nil
}
