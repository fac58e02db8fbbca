package backend

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/harness-edge/harness-edge/backend/store"
)

// What the runtime does with a stored value it cannot decode (docs/operations.md, "A record
// that cannot be decoded"): requests about it answer INTERNAL_ERROR, walks and listings skip
// it, and the log names it once. Every request that meets it would otherwise log it again: a
// console polling a listing every few seconds, or a client reconnecting to a stream, would
// bury the one line an operator needs.

// DamagedRecord is what a DamageObserver is told a read met: an execution record, an event
// of an execution's log, or a conversation record.
type DamagedRecord string

const (
	DamagedExecution    DamagedRecord = "execution"
	DamagedEvent        DamagedRecord = "event"
	DamagedConversation DamagedRecord = "conversation" // met by the conversations listing
)

// DamageObserver, when the Options' Observer implements it too, is told of every read that met
// a stored value it could not decode (each time, not once per record as the log is): a counter
// of them that keeps rising says something still asks for a damaged record. Calls must return
// quickly.
type DamageObserver interface {
	StoredRecordUndecodable(kind DamagedRecord)
}

// maxDamageReports bounds the records the log names one by one (and the memory that remembers
// them): a store with more damaged records than this needs restoring, not a longer log.
const maxDamageReports = 1000

// damageReports logs each damaged record once and counts every read of one.
type damageReports struct {
	log      *slog.Logger
	observer DamageObserver // nil: none

	mu       sync.Mutex
	reported map[damageKey]struct{}
	full     bool // maxDamageReports reached, and said so
}

type damageKey struct {
	kind DamagedRecord
	id   string
}

func newDamageReports(log *slog.Logger, obs Observer) *damageReports {
	d := &damageReports{log: log, reported: make(map[damageKey]struct{})}
	d.observer, _ = obs.(DamageObserver)
	return d
}

// report counts a read of the damaged record kind/id (an execution id for executions and
// events, a conversation id for conversations) and logs it the first time.
func (d *damageReports) report(kind DamagedRecord, id string, err error) {
	if d.observer != nil {
		d.observer.StoredRecordUndecodable(kind)
	}
	key := damageKey{kind, id}
	d.mu.Lock()
	_, seen := d.reported[key]
	full := len(d.reported) >= maxDamageReports
	announceFull := full && !seen && !d.full
	if !seen && !full {
		d.reported[key] = struct{}{}
	}
	if announceFull {
		d.full = true
	}
	d.mu.Unlock()
	switch {
	case seen:
	case announceFull:
		d.log.Error("more stored records cannot be decoded than the log names one by one; further ones are only counted (see docs/operations.md)",
			"named", maxDamageReports)
	case full:
	case kind == DamagedEvent:
		d.log.Error("stored event cannot be decoded; reads of this execution's events answer INTERNAL_ERROR (see docs/operations.md)",
			"execution", id, "err", err)
	case kind == DamagedConversation:
		d.log.Error("stored conversation record cannot be decoded; listings skip it and reads of it answer INTERNAL_ERROR (see docs/operations.md)",
			"conversation", id, "err", err)
	default:
		d.log.Error("stored execution record cannot be decoded; it is skipped and answers INTERNAL_ERROR (see docs/operations.md)",
			"execution", id, "err", err)
	}
}

// damagedEventError marks a damaged event handed to a walk's undecodable callback, which
// reports records by execution id: reportUndecodable reports it as an event.
type damagedEventError struct{ error }

func (e damagedEventError) Unwrap() error { return e.error }

// readError is the INTERNAL_ERROR of a failed read of execution id's kind of record. When the
// stored value cannot be decoded, it is reported here (logged once per record, counted every
// time), and the error says so (Error.Logged), so that the HTTP layer does not log each request.
func (d *damageReports) readError(kind DamagedRecord, id, op string, err error) *Error {
	e := internalError(op, err)
	if errors.Is(err, store.ErrUndecodable) {
		d.report(kind, id, err)
		e.logged = true
	}
	return e
}

// reportUndecodable reports a stored execution record that cannot be decoded (recovery,
// retention and listings skip it; reads of it answer INTERNAL_ERROR), or a damaged event a walk
// met: logged once, with the id that lets an operator find it; docs/operations.md says what to
// do.
func (d *damageReports) reportUndecodable(id string, err error) {
	kind := DamagedExecution
	if errors.As(err, new(damagedEventError)) {
		kind = DamagedEvent
	}
	d.report(kind, id, err)
}
