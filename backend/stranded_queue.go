package backend

import "sync"

// strandedExecutions is the queue of the stranded loop.
type strandedExecutions struct {
	rt    *Runtime
	mu    sync.Mutex
	queue []*execution
	wake  chan struct{} // capacity 1: something was queued
}

func newStrandedExecutions(rt *Runtime) *strandedExecutions {
	return &strandedExecutions{rt: rt, wake: make(chan struct{}, 1)}
}

func (s *strandedExecutions) add(xs ...*execution) {
	s.mu.Lock()
	s.queue = append(s.queue, xs...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *strandedExecutions) take() []*execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	xs := s.queue
	s.queue = nil
	return xs
}
