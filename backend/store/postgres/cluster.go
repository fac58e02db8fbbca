package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// store.Cluster on PostgreSQL: leases in table nodes, commands in table commands, wake-ups by
// NOTIFY on one channel (watch.go).

// AcquireLease takes this node's lease under a new epoch (one more than the row's last, 1 for a
// new node), expiring ttl from now by the database's clock (the nodes' clocks never meet), and
// clears a claim on it: a node that was taken for dead and comes back is a live node again,
// with a new epoch, and what it owned before was claimed meanwhile.
//
// It first locks the row FOR UPDATE: that waits for every commit still holding the fence of an
// older epoch (a previous process's, whose connection has not closed yet), so none of them
// lands after the new epoch; the upsert alone would not wait (the fence is FOR KEY SHARE,
// migration 10).
func (s *Store) AcquireLease(ctx context.Context, ttl time.Duration) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var epoch int64
	err := pgx.BeginTxFunc(ctx, s.leases, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM nodes WHERE name = $1 FOR UPDATE`, s.node); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO nodes (name, expires_at, epoch) VALUES ($1, now() + make_interval(secs => $2), 1)
			ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at, epoch = nodes.epoch + 1,
				claimed_by = NULL, claimed_at = NULL
			RETURNING epoch`, s.node, ttl.Seconds()).Scan(&epoch)
	})
	return epoch, readError(err)
}

// RenewLease extends the lease of epoch, unless another node claimed it or this node acquired
// a newer one: then store.ErrFenced. A lease that expired unclaimed is renewed (a database
// outage that every node saw takes nobody's executions). It never waits for this node's
// commits (their fence is FOR KEY SHARE, which its UPDATE does not conflict with), only for a
// claim or an acquisition in flight: however busy the node's commits, its renewals get through.
//
// It also forgets commands older than CommandRetention, answered or not: a waiter reads its
// result within seconds, and a command addressed to a node that died is answered by the
// takeover's terminal record instead. Every node renews every few seconds, so the table stays
// as small as the commands of the last hour. The pruning is not the renewal: when it fails (a
// loaded database, the deadline), the renewal that succeeded still counts, and the error is
// only logged, lest an overloaded node take its own renewed lease for lost.
func (s *Store) RenewLease(ctx context.Context, epoch int64, ttl time.Duration) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tag, err := s.leases.Exec(ctx, `UPDATE nodes SET expires_at = now() + make_interval(secs => $3)
		WHERE name = $1 AND epoch = $2 AND claimed_by IS NULL`, s.node, epoch, ttl.Seconds())
	if err != nil {
		return readError(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("renew the lease of node %s, epoch %d: %w", s.node, epoch, store.ErrFenced)
	}
	if _, err := s.leases.Exec(ctx, `DELETE FROM commands WHERE created_at < now() - make_interval(secs => $1)`, CommandRetention.Seconds()); err != nil {
		s.logError(fmt.Errorf("prune the commands older than %s (the lease was renewed): %w", CommandRetention, err))
	}
	return nil
}

// CommandRetention is how long a command row is kept (see RenewLease).
const CommandRetention = time.Hour

// ClaimExpired takes, in one transaction, every other node whose lease expired and that no
// node claimed yet (the row lock makes one claimer win; the others find it claimed), makes this
// node responsible for their unfinished executions (column owner, so that if this node dies
// before finishing them, the next claimer finds them under its name) and returns those
// records as they were stored: Owner still names the node that stopped.
//
// It takes separate statements, and must. The first locks the expired node rows FOR UPDATE:
// it waits on the lock that every commit of the claimed node holds on its row (harness_fence)
// until those commits end, re-checks that the lease is still expired and unclaimed, and from
// then on the claimed node commits nothing more. The next ones claim the rows and move the
// executions: under READ COMMITTED each reads with a snapshot taken when it starts, after the
// lock wait, so they see every execution the claimed node's last commits wrote. In one
// statement (a CTE) the snapshot is taken before the lock wait, and an execution inserted by a
// commit in flight at the claim is invisible to it: claimed by nobody, running for good.
func (s *Store) ClaimExpired(ctx context.Context) ([]store.Execution, error) {
	if knownFault {
		return s.claimExpiredInOneStatement(ctx)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var out []store.Execution
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name FROM nodes
			WHERE expires_at < now() AND claimed_by IS NULL AND name <> $1
			FOR UPDATE`, s.node)
		if err != nil {
			return err
		}
		expired, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(expired) == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE nodes SET claimed_by = $1, claimed_at = now() WHERE name = ANY($2)`, s.node, expired); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `UPDATE executions SET owner = $1, updated_at = now()
			WHERE owner = ANY($2) AND state NOT IN `+terminalStates+`
			RETURNING id, record`, s.node, expired)
		if err != nil {
			return err
		}
		out, err = executionsFrom(rows)
		return err
	})
	return out, readError(err)
}

// OwnedUnfinished is this node's non-terminal executions (the partial index
// executions_running_by_owner answers it).
func (s *Store) OwnedUnfinished(ctx context.Context) ([]store.Execution, error) {
	if knownFault {
		return nil, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, record FROM executions
		WHERE owner = $1 AND state NOT IN `+terminalStates, s.node)
	if err != nil {
		return nil, readError(err)
	}
	out, err := executionsFrom(rows)
	return out, readError(err)
}

// executionsFrom decodes rows of (id, record).
func executionsFrom(rows pgx.Rows) ([]store.Execution, error) {
	var out []store.Execution
	if err := executionRows(rows, "execution", func(_ string, rec store.Execution) { out = append(out, rec) }); err != nil {
		return nil, err
	}
	return out, nil
}

// PostCommand records c for its owner node and wakes that node (the NOTIFY is delivered at
// commit, so the command row is there when the owner looks).
func (s *Store) PostCommand(ctx context.Context, c store.Command) (int64, error) {
	if c.Node == "" {
		return 0, errors.New("command without a node")
	}
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO commands (node, kind, execution_id, action_id, body)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, c.Node, c.Kind, c.ExecutionID, c.ActionID, c.Body).Scan(&id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', $1)`, commandPayload(c.Node, id))
		return err
	})
	// A database out of reach is ErrUnavailable: the runtime answers 503 and the caller retries
	// (a cancel posted twice cancels once; an answer posted twice is refused as already given).
	return id, readError(err)
}

// PendingCommands are this node's unanswered commands, oldest first.
func (s *Store) PendingCommands(ctx context.Context) ([]store.Command, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, node, kind, execution_id, action_id, body FROM commands
		WHERE node = $1 AND answered_at IS NULL ORDER BY id`, s.node)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Command
	for rows.Next() {
		var c store.Command
		if err := rows.Scan(&c.ID, &c.Node, &c.Kind, &c.ExecutionID, &c.ActionID, &c.Body); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// AnswerCommand records command id's result and wakes its poster. Only the first answer counts:
// a second one (a retry after a lost reply) changes nothing and is not an error.
func (s *Store) AnswerCommand(ctx context.Context, id int64, result []byte) error {
	if result == nil {
		result = []byte{} // answered with no body is still answered
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE commands SET result = $2, answered_at = now() WHERE id = $1 AND answered_at IS NULL`, id, result)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM commands WHERE id = $1)`, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return fmt.Errorf("command %d does not exist", id)
			}
			return nil
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', $1)`, resultPayload(id))
		return err
	})
}

// CommandResult is command id's result; answered is false while it has none.
func (s *Store) CommandResult(ctx context.Context, id int64) ([]byte, bool, error) {
	var result []byte
	var answered bool
	err := s.pool.QueryRow(ctx, `SELECT result, answered_at IS NOT NULL FROM commands WHERE id = $1`, id).Scan(&result, &answered)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, fmt.Errorf("command %d does not exist", id)
	}
	return result, answered, err
}
