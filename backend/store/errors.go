package store

import "errors"

var (
	// ErrClosed is returned by Commit and Submit once Close has begun.
	ErrClosed = errors.New("store closed")
	// ErrLocked is matched (errors.Is) by the error an Open returns when another process holds
	// the store (bbolt: the file lock was not released in time). Callers that retry an open —
	// a Caddy reload racing the old instance's close — look for it instead of a driver's error.
	ErrLocked = errors.New("store is locked by another process")
	// ErrConflict is matched by the error Commit (or a Request's Done) reports when the batch
	// holds an Idempotency record for a (tenant, conversation, key) that already has one.
	// Nothing of that batch is applied; the caller reads the existing record and answers with
	// it. Two nodes starting the same idempotent request at once meet here.
	ErrConflict = errors.New("idempotency record already exists")
	// ErrDamaged is matched by the error an Open returns when the store exists but cannot be
	// used as it is (bbolt: an empty, truncated or inconsistent file).
	ErrDamaged = errors.New("store file is damaged")
	// ErrFenced is matched by the error Commit (or a Request's Done) reports when the batch was
	// written under a lease epoch (Batch.Lease) this node no longer holds: another node claimed
	// it (its lease expired) and owns its executions now. Nothing of the batch is applied, and
	// nothing written under that epoch ever will be: the node must stop the executions it ran
	// under it and serve them from the store. RenewLease reports it too. It is permanent, never
	// worth a retry.
	ErrFenced = errors.New("this node's lease was taken over: write fenced")
	// ErrUnavailable is matched by the error of a call that could not reach the store in time
	// (a stalled or unreachable database server): nothing was applied, and the same call may
	// succeed later. The runtime answers it with 503 UNAVAILABLE.
	ErrUnavailable = errors.New("store unavailable")
	// ErrOutcomeUnknown is matched by the error of a transaction whose end the store did not
	// learn (the connection was lost while COMMIT was on its way): it may have been applied.
	// It is transient (the Committer tries the group again, and the retry tolerates what the
	// lost attempt wrote), and the requests it held lose their Deadline: they are answered once
	// the store answers, never as "not applied" when they might have been.
	ErrOutcomeUnknown = errors.New("the store did not answer whether the transaction was applied")
	// ErrUndecodable is matched by the error a read returns for a stored value that is not
	// what this version writes and cannot be decoded either: damaged on disk, or written by a
	// bug or an older version. It is not a failure of the store, and retrying does not help:
	// readers report it with the record's id and answer INTERNAL_ERROR, and walks (recovery,
	// listings) skip the record.
	ErrUndecodable = errors.New("stored value cannot be decoded")
)
