package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Migration 4 (issue 34) gives every event a checksum (events.checksum, store.EventChecksum as
// a signed 32-bit integer), which reads compare before an event leaves the store. It is
// written in Go because the checksum is CRC-32C, which PostgreSQL before 18 cannot compute, and
// because each existing row is first checked in full (store.LegacyEvent: valid UTF-8, valid
// JSON, its sequence and its type): a row that fails gets an empty type and stays undecodable to
// readers, a row that passes is trusted from then on only as far as its checksum says. Like
// 00003 it rewrites the events table once, in one transaction.
var eventChecksumsMigration = goose.NewGoMigration(4,
	&goose.GoFunc{RunTx: addEventChecksums},
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `ALTER TABLE events DROP COLUMN checksum`)
		return err
	}})

// checksumPage is how many rows the migration reads and updates at a time.
const checksumPage = 5000

func addEventChecksums(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE events ADD COLUMN checksum integer`); err != nil {
		return err
	}
	afterID, afterSeq := "", int64(0)
	for {
		rows, err := tx.QueryContext(ctx, `SELECT execution_id, sequence, type, data FROM events
			WHERE (execution_id, sequence) > ($1, $2) ORDER BY execution_id, sequence LIMIT $3`, afterID, afterSeq, checksumPage)
		if err != nil {
			return err
		}
		var ids, types []string
		var seqs []int64
		var sums []int32
		for rows.Next() {
			var id, typ string
			var seq int64
			var data []byte
			if err := rows.Scan(&id, &seq, &typ, &data); err != nil {
				rows.Close()
				return err
			}
			if _, err := store.LegacyEvent(seq, []byte(typ), true, data); err != nil {
				typ = "" // undecodable, as 00003 leaves a row whose JSON it cannot read
			}
			ids, seqs, types = append(ids, id), append(seqs, seq), append(types, typ)
			sums = append(sums, int32(store.EventChecksum(seq, typ, data)))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		if _, err := tx.ExecContext(ctx, `UPDATE events SET type = u.type, checksum = u.checksum
			FROM unnest($1::text[], $2::int8[], $3::text[], $4::int4[]) AS u(execution_id, sequence, type, checksum)
			WHERE events.execution_id = u.execution_id AND events.sequence = u.sequence`, ids, seqs, types, sums); err != nil {
			return fmt.Errorf("events up to %s:%d: %w", ids[len(ids)-1], seqs[len(seqs)-1], err)
		}
		afterID, afterSeq = ids[len(ids)-1], seqs[len(seqs)-1]
	}
	_, err := tx.ExecContext(ctx, `ALTER TABLE events ALTER COLUMN checksum SET NOT NULL`)
	return err
}
