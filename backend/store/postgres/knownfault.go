package postgres

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The known fault, for harness-nemesis's demonstration that it finds a real bug (docs/nemesis.md,
// "The known fault"): built with -tags nemesis_knownfault, the store undoes issue 44's claim fix
// — ClaimExpired is the one statement it was before (its snapshot taken before it waits on the
// claimed node's commit in flight, so an execution that commit inserts is claimed by nobody),
// and OwnedUnfinished answers nothing, so the orphan sweep that would finish such an execution
// is off too — and every commit waits HARNESS_KNOWNFAULT_COMMIT_DELAY (a Go duration) after its
// fence and writes, before COMMIT, to widen the window a stop or a silent cut must fall in.
// knownFault is a constant (knownfault_off.go, knownfault_on.go): in every other build this
// code is dead and compiled away.

// claimExpiredInOneStatement is ClaimExpired as it was before issue 44 (one statement, a CTE).
func (s *Store) claimExpiredInOneStatement(ctx context.Context) ([]store.Execution, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var out []store.Execution
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH expired AS (
				UPDATE nodes SET claimed_by = $1, claimed_at = now()
				WHERE expires_at < now() AND claimed_by IS NULL AND name <> $1
				RETURNING name)
			UPDATE executions SET owner = $1, updated_at = now()
			WHERE owner IN (SELECT name FROM expired) AND state NOT IN `+terminalStates+`
			RETURNING id, record`, s.node)
		if err != nil {
			return err
		}
		out, err = executionsFrom(rows)
		return err
	})
	return out, readError(err)
}

var knownFaultDelay = sync.OnceValue(func() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("HARNESS_KNOWNFAULT_COMMIT_DELAY"))
	return d
})

// knownFaultWait is the delay inside the fenced commit.
func knownFaultWait() {
	if d := knownFaultDelay(); d > 0 {
		time.Sleep(d)
	}
}
