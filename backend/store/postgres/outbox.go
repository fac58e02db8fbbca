package postgres

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-edge/harness-edge/backend/store"
)

// The webhook outbox on PostgreSQL (store.Store's outbox methods; rows are written by
// applyGroup). Several nodes run a sender each over the same rows, so OutboxHeads claims what
// it hands out: claimed_by = this node and claimed_until = now() + Config.OutboxClaim (the
// database's clock), taken with FOR UPDATE SKIP LOCKED, so each head goes to one sender at a
// time. A result (OutboxResults) releases the claim; a sender that dies holding one delays its
// row by the claim's length, then another node takes it (at least once). Only a lane's head
// (lowest sequence) is ever claimed, so a lane is delivered in order across nodes.

// head is a lane's first pending row, without its payload.
type head struct {
	executionID  string
	target       []byte
	sequence     int64
	created      time.Time
	nextAttempt  time.Time
	claimedBy    *string
	claimedUntil *time.Time
	held         bool // claimed, and the claim has not expired
}

func (s *Store) OutboxHeads(now time.Time, busy func(lane string) bool, limit int) (due []store.Notification, nextDue, oldest time.Time, err error) {
	heads, err := s.outboxHeads()
	if err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	var ids []string
	var targets [][]byte
	var seqs []int64
	for _, h := range heads {
		if oldest.IsZero() || h.created.Before(oldest) {
			oldest = h.created
		}
		if busy(h.executionID + string(h.target)) {
			continue
		}
		wake := time.Time{}
		switch {
		case h.held && (h.claimedBy == nil || *h.claimedBy != s.node):
			// Another node is sending it: look again when its claim runs out.
			wake = *h.claimedUntil
		case h.nextAttempt.After(now):
			wake = h.nextAttempt
		case len(ids) < limit:
			// Due. A claim of our own that busy does not know of was left by a send that
			// stopping cut short (or a previous process of this node): take it again.
			ids, targets, seqs = append(ids, h.executionID), append(targets, h.target), append(seqs, h.sequence)
		}
		if !wake.IsZero() && (nextDue.IsZero() || wake.Before(nextDue)) {
			nextDue = wake
		}
	}
	if len(ids) == 0 {
		return nil, nextDue, oldest, nil
	}
	due, err = s.claimOutbox(ids, targets, seqs, now)
	return due, nextDue, oldest, err
}

func (s *Store) outboxHeads() ([]head, error) {
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (execution_id, target)
			execution_id, target, sequence, created_at, next_attempt, claimed_by, claimed_until,
			coalesce(claimed_until > now(), false)
		FROM webhook_outbox ORDER BY execution_id, target, sequence`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []head
	for rows.Next() {
		var h head
		if err := rows.Scan(&h.executionID, &h.target, &h.sequence, &h.created, &h.nextAttempt, &h.claimedBy, &h.claimedUntil, &h.held); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// claimOutbox claims the given heads for this node and returns those it got: rows another
// node holds (locked right now, or claimed since the heads were read) or that are gone are
// skipped.
func (s *Store) claimOutbox(ids []string, targets [][]byte, seqs []int64, now time.Time) ([]store.Notification, error) {
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `UPDATE webhook_outbox o
		SET claimed_by = $4, claimed_until = now() + make_interval(secs => $5)
		FROM (SELECT execution_id, target, sequence FROM webhook_outbox
			WHERE (execution_id, target, sequence) IN (SELECT * FROM unnest($1::text[], $2::bytea[], $3::int8[]))
				AND next_attempt <= $6
				AND (claimed_until IS NULL OR claimed_until <= now() OR claimed_by = $4)
			FOR UPDATE SKIP LOCKED) c
		WHERE o.execution_id = c.execution_id AND o.target = c.target AND o.sequence = c.sequence
		RETURNING o.notification`, ids, targets, seqs, s.node, s.claim.Seconds(), now)
	if err != nil {
		return nil, err
	}
	out, err := notificationsFrom(rows)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.Notification) int {
		if c := cmp.Compare(a.Lane(), b.Lane()); c != 0 {
			return c
		}
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	return out, nil
}

func (s *Store) FailedNotifications(executionID string) ([]store.Notification, error) {
	ctx, cancel := s.opCtx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT notification FROM webhook_failed WHERE execution_id = $1 ORDER BY sequence, target`, executionID)
	if err != nil {
		return nil, err
	}
	return notificationsFrom(rows)
}

// notificationsFrom decodes rows whose one column is a notification's JSON, and closes them.
func notificationsFrom(rows pgx.Rows) ([]store.Notification, error) {
	raws, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	out := make([]store.Notification, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("outbox row: %w", err)
		}
	}
	return out, nil
}

func (s *Store) PendingNotifications() (int, error) {
	var n int
	_, err := s.getOne(`SELECT count(*) FROM webhook_outbox`, nil, &n)
	return n, err
}
