package backend

import "sync"

// liveExecutions are the executions running in this process, and those finishing right now:
// each from before its start is committed (start.go) until after its terminal commit
// (run.go's finished), or until this node loses it (fencing). locate looks here first.
type liveExecutions struct {
	mu     sync.RWMutex
	byID   map[string]*execution
	closed bool // the runtime closed: nothing enters any more
}

func newLiveExecutions() *liveExecutions {
	return &liveExecutions{byID: make(map[string]*execution)}
}

// enter adds a started execution; false once the runtime closed (Close stops what the map
// holds, so nothing may enter after).
func (l *liveExecutions) enter(x *execution) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.byID[x.id] = x
	return true
}

// put adds an execution resumed by this process (Open, or a takeover).
func (l *liveExecutions) put(x *execution) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byID[x.id] = x
}

// leave removes x if it is still there, and reports whether it was.
func (l *liveExecutions) leave(x *execution) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID[x.id] != x {
		return false
	}
	delete(l.byID, x.id)
	return true
}

// get returns the live execution id, nil when it is not live here.
func (l *liveExecutions) get(id string) *execution {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.byID[id]
}

// close refuses new entries and returns what is live (Close stops it).
func (l *liveExecutions) close() []*execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	all := make([]*execution, 0, len(l.byID))
	for _, x := range l.byID {
		all = append(all, x)
	}
	return all
}

// removeLease takes out and returns every execution that runs under lease epoch (fenced).
func (l *liveExecutions) removeLease(epoch int64) []*execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*execution
	for id, x := range l.byID {
		if x.lease == epoch {
			out = append(out, x)
			delete(l.byID, id)
		}
	}
	return out
}
