// Package hotwindow is the newest events of one execution's log kept in memory for readers
// (Window), bounded by count and bytes: a live execution's (backend/publish.go) and those of
// another node's execution followed by a tail (backend/cluster). Older events are read back
// from the store, where they were committed before anyone saw them.
package hotwindow

import (
	"slices"

	"github.com/harness-edge/harness-edge/backend/store"
)

// MaxBytes bounds the JSON bytes of a hot window, whatever its event count.
const MaxBytes = 8 << 20

// trim keeps the newer part of hot (whose JSON totals bytes) once it holds more than count
// events or MaxBytes: the newer half by count, and by bytes. It returns what is kept, in a
// fresh array so that the dropped events can be collected, how many were dropped and their
// bytes; hot itself when it is within both bounds.
func trim(hot []store.Event, bytes, count int) (kept []store.Event, dropped, droppedBytes int) {
	if len(hot) <= count && bytes <= MaxBytes {
		return hot, 0, 0
	}
	drop := max(len(hot)-count/2, 0)
	for _, e := range hot[:drop] {
		droppedBytes += len(e.JSON)
	}
	for drop < len(hot)-1 && bytes-droppedBytes > MaxBytes/2 {
		droppedBytes += len(hot[drop].JSON)
		drop++
	}
	return slices.Clone(hot[drop:]), drop, droppedBytes
}
