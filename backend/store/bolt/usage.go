package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// bucketUsage holds each execution's cumulative usage for sums (store.ExecutionUsage), keyed so
// that one tenant's rows over a time range are one cursor walk: uvarint(len(tenant)) + tenant +
// uint64 BE creation ms + execution id → the row's JSON (store.UsageRecord). The length prefix
// keeps a tenant's rows apart from those of a tenant whose name starts with it.
//
// The bucket is made by the first commit that carries usage, not by Open: a file that never saw
// usage keeps format 2 exactly, and an older release opens a file that has it (it ignores the
// bucket). A put replaces the execution's row in place, because the key is the execution's
// (tenant and creation time never change). Retention does not delete rows: what was spent
// stays in the sums after the execution is swept (docs/usage.md).
var bucketUsage = []byte("usage")

func usageTenantPrefix(tenant string) []byte {
	buf := binary.AppendUvarint(make([]byte, 0, len(tenant)+binary.MaxVarintLen64+8), uint64(len(tenant)))
	return append(buf, tenant...)
}

func usageKey(r store.ExecutionUsage) []byte {
	key := binary.BigEndian.AppendUint64(usageTenantPrefix(r.Tenant), uint64(r.CreatedMs))
	return append(key, r.ExecutionID...)
}

// putUsage writes a batch's usage rows (apply.go), in the group's transaction.
func putUsage(tx *bbolt.Tx, rows []store.ExecutionUsage) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketUsage)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := putJSON(b, usageKey(r), store.UsageRecord(r)); err != nil {
			return fmt.Errorf("put usage of %s: %w", r.ExecutionID, err)
		}
	}
	return nil
}

// ForEachUsage walks q's tenant's rows from q.FromMs to q.ToMs.
func (s *Store) ForEachUsage(q store.UsageQuery, visit func(store.ExecutionUsage) bool) error {
	prefix := usageTenantPrefix(q.Tenant)
	from := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(max(q.FromMs, 0)))
	return s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsage)
		if b == nil {
			return nil // nothing reported usage yet
		}
		c := b.Cursor()
		for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) < len(prefix)+8 || int64(binary.BigEndian.Uint64(k[len(prefix):])) >= q.ToMs {
				return nil
			}
			r, err := store.DecodeUsageRecord(v, json.Unmarshal)
			if err != nil {
				return fmt.Errorf("stored usage record %q: %w: %w", k, store.ErrUndecodable, err)
			}
			if !visit(r) {
				return nil
			}
		}
		return nil
	})
}
