package backend

// Reads of what is stored, for executions that do not run here (finished, stored, another
// node's) and for the older events of live ones; a value that cannot be decoded is reported
// once (damaged.go).

func (r *Runtime) readStored(executionID string, after int64, limit int) ([]Event, error) {
	if l, ok := r.finishedLogs.get(executionID); ok {
		return l.after(after, limit), nil
	}
	events, err := r.store.Events(executionID, after, limit)
	if err != nil {
		return nil, r.damage.readError(DamagedEvent, executionID, "read events", err)
	}
	return events, nil
}

// storedLog is the EventSource of a terminal execution: its log, complete, up to lastSeq.
type storedLog struct {
	r       *Runtime
	id      string
	lastSeq int64
}

func (l storedLog) Ready(int64) <-chan struct{} { return closedChan }

func (l storedLog) Exhausted(cursor int64) bool { return cursor >= l.lastSeq }

func (l storedLog) AwaitingAction() bool { return false }

func (l storedLog) Release() {}

func (l storedLog) Read(cursor int64, max int) ([]Event, bool, error) {
	if err := l.r.checkOpen(); err != nil {
		return nil, true, err
	}
	if cursor >= l.lastSeq {
		return nil, true, nil
	}
	n := int(l.lastSeq - cursor)
	if max > 0 && max < n {
		n = max
	}
	events, err := l.r.readStored(l.id, cursor, n)
	return events, true, err
}
