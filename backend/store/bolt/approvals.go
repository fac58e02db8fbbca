package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Approvals (store.ActionRecords): two indexes over the actions bucket and the standing rules.
// The indexes are kept by the transaction that puts an action record (indexAction), so an action
// leaves the inbox and the deadlines in the commit that answers or abandons it. Their values are
// empty, and every read checks the record they point at (still pending, still that tenant): an
// entry a release without them left behind (it could write the records, not the indexes) is
// skipped, never served. The buckets are made, and filled from the records, by the first Open
// that finds them missing (buildApprovalIndexes), as the listing's are: no format change.
var (
	// pending actions by tenant, oldest first: tenantPrefix(tenant) + ms BE + action id → empty
	bucketActionsPending = []byte("actions_pending")
	// pending actions with a deadline, earliest first: ms BE + action id → empty
	bucketActionsExpiring = []byte("actions_expiring")
	// standing rules: rule id → store.Rule JSON
	bucketActionRules = []byte("action_rules")
	// rules by scope: tenantPrefix(tenant) + tenantPrefix(conversation) + rule id → empty
	bucketActionRulesByScope = []byte("action_rules_by_scope")

	approvalBuckets = [][]byte{bucketActionsPending, bucketActionsExpiring, bucketActionRules, bucketActionRulesByScope}
)

// tenantPrefix is a length-prefixed name: no tenant (or conversation) name, whatever its bytes,
// makes its keys the prefix of another's.
func tenantPrefix(dst []byte, name string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	return append(dst, name...)
}

func pendingKey(a store.Action) []byte {
	p := store.ActionPositionOf(a)
	key := tenantPrefix(make([]byte, 0, 10+len(a.Tenant)+8+len(p.ID)), a.Tenant)
	return appendTimeIndexKey(key, p)
}

func expiringKey(a store.Action) ([]byte, bool) {
	at := a.ExpiresAt()
	if at.IsZero() {
		return nil, false
	}
	return appendTimeIndexKey(nil, store.ListPosition{CreatedMs: uint64(at.UnixMilli()), ID: a.Request.ID}), true
}

func ruleScopeKey(r store.Rule) []byte {
	conversation := ""
	if r.ConversationID != nil {
		conversation = *r.ConversationID
	}
	key := tenantPrefix(nil, r.Tenant)
	key = tenantPrefix(key, conversation)
	return append(key, r.ID...)
}

// indexAction keeps the approval indexes of a's record, which the caller is about to put: the
// entries of the record it replaces go, a pending record's come.
func indexAction(tx *bbolt.Tx, a store.Action) error {
	if raw := tx.Bucket(bucketActions).Get([]byte(a.Request.ID)); raw != nil {
		var old store.Action
		if json.Unmarshal(raw, &old) == nil {
			if err := unindexAction(tx, withOrigin(tx, old)); err != nil {
				return err
			}
		}
	}
	if a.Status != store.ActionPending {
		return nil
	}
	a = withOrigin(tx, a)
	if err := tx.Bucket(bucketActionsPending).Put(pendingKey(a), nil); err != nil {
		return err
	}
	if key, ok := expiringKey(a); ok {
		return tx.Bucket(bucketActionsExpiring).Put(key, nil)
	}
	return nil
}

// unindexAction removes a's approval index entries (deleting absent keys is a no-op).
func unindexAction(tx *bbolt.Tx, a store.Action) error {
	if err := tx.Bucket(bucketActionsPending).Delete(pendingKey(a)); err != nil {
		return err
	}
	if key, ok := expiringKey(a); ok {
		return tx.Bucket(bucketActionsExpiring).Delete(key)
	}
	return nil
}

// unindexActionID removes the index entries of the stored action id (retention deletes it).
func unindexActionID(tx *bbolt.Tx, id string) error {
	raw := tx.Bucket(bucketActions).Get([]byte(id))
	if raw == nil {
		return nil
	}
	var a store.Action
	if json.Unmarshal(raw, &a) != nil {
		return nil // undecodable: it was never indexed by this code either
	}
	return unindexAction(tx, withOrigin(tx, a))
}

func putRules(tx *bbolt.Tx, rules []store.Rule) error {
	for _, r := range rules {
		if err := putJSON(tx.Bucket(bucketActionRules), []byte(r.ID), r); err != nil {
			return fmt.Errorf("put rule %s: %w", r.ID, err)
		}
		if err := tx.Bucket(bucketActionRulesByScope).Put(ruleScopeKey(r), nil); err != nil {
			return fmt.Errorf("index rule %s: %w", r.ID, err)
		}
	}
	return nil
}

// buildApprovalIndexes creates the approval buckets when they are missing (a new file, or one
// written by a release without them) and indexes the pending actions already stored, taking
// their tenant, conversation and provider from their execution when the record predates them.
// One transaction, as buildListingIndex.
func buildApprovalIndexes(db *bbolt.DB) error {
	return db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketActionsPending) != nil {
			return nil
		}
		for _, name := range approvalBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		var backfill []store.Action
		err := tx.Bucket(bucketActions).ForEach(func(_, v []byte) error {
			var a store.Action
			if json.Unmarshal(v, &a) != nil || a.Status != store.ActionPending {
				return nil // damaged records are reported by the reads, not here
			}
			backfill = append(backfill, withOrigin(tx, a))
			return nil
		})
		if err != nil {
			return err
		}
		for _, a := range backfill {
			if err := indexAction(tx, a); err != nil {
				return err
			}
		}
		return nil
	})
}

// withOrigin fills in the tenant, conversation and provider of an action record written
// before records named them, from its execution (the record itself is left as it was written).
func withOrigin(tx *bbolt.Tx, a store.Action) store.Action {
	if a.ConversationID != "" {
		return a
	}
	var rec store.Execution
	if raw := tx.Bucket(bucketExecutions).Get([]byte(a.Request.ExecutionID)); raw != nil && json.Unmarshal(raw, &rec) == nil {
		a.Tenant, a.ConversationID, a.ProviderID = rec.Tenant, rec.Execution.ConversationID, rec.Execution.ProviderID
	}
	return a
}

// pendingAction decodes the action record an index entry points at; ok is false when the entry
// is stale (the record is gone or no longer pending).
func pendingAction(tx *bbolt.Tx, id []byte) (a store.Action, ok bool, err error) {
	raw := tx.Bucket(bucketActions).Get(id)
	if raw == nil {
		return a, false, nil
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, false, fmt.Errorf("stored action %q: %w: %w", id, store.ErrUndecodable, err)
	}
	return withOrigin(tx, a), a.Status == store.ActionPending, nil
}

func (s *Store) PendingActions(q store.ActionQuery) ([]store.Action, *store.ListPosition, error) {
	var out []store.Action
	var next *store.ListPosition
	prefix := tenantPrefix(nil, q.Tenant)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketActionsPending).Cursor()
		k, _ := c.Seek(prefix)
		if q.After != nil {
			after := appendTimeIndexKey(slices.Clone(prefix), *q.After)
			k, _ = c.Seek(after)
			if bytes.Equal(k, after) {
				k, _ = c.Next()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			id := k[len(prefix)+8:]
			a, ok, err := pendingAction(tx, id)
			if err != nil {
				if q.Undecodable != nil {
					q.Undecodable(string(id), err)
				}
				continue
			}
			if !ok || !q.Matches(a) {
				continue
			}
			if len(out) == q.Limit {
				p := store.ActionPositionOf(out[len(out)-1])
				next = &p
				return nil
			}
			out = append(out, a)
		}
		return nil
	})
	return out, next, err
}

func (s *Store) DueActions(now time.Time, limit int) ([]store.Action, time.Time, error) {
	var due []store.Action
	var next time.Time
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketActionsExpiring).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) < 8 {
				continue
			}
			at := time.UnixMilli(int64(binary.BigEndian.Uint64(k)))
			a, ok, err := pendingAction(tx, k[8:])
			if err != nil || !ok {
				continue // stale, or damaged: Action reports it when someone answers
			}
			if at.After(now) {
				next = at
				return nil
			}
			if len(due) == limit {
				next = at
				return nil
			}
			due = append(due, a)
		}
		return nil
	})
	return due, next, err
}

func (s *Store) Rule(id string) (store.Rule, bool, error) {
	var r store.Rule
	found, err := s.getJSON(bucketActionRules, []byte(id), &r)
	return r, found, err
}

func (s *Store) Rules(tenant, conversationID string) ([]store.Rule, error) {
	tenantKey := tenantPrefix(nil, tenant)
	prefixes := [][]byte{tenantKey}
	if conversationID != "" {
		prefixes = [][]byte{tenantPrefix(slices.Clone(tenantKey), ""), tenantPrefix(slices.Clone(tenantKey), conversationID)}
	}
	var out []store.Rule
	err := s.db.View(func(tx *bbolt.Tx) error {
		rules := tx.Bucket(bucketActionRules)
		c := tx.Bucket(bucketActionRulesByScope).Cursor()
		for _, prefix := range prefixes {
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				id, ok := ruleIDOf(k, len(tenantKey))
				if !ok {
					continue
				}
				raw := rules.Get(id)
				if raw == nil {
					continue
				}
				var r store.Rule
				if err := json.Unmarshal(raw, &r); err != nil {
					return fmt.Errorf("stored rule %q: %w: %w", id, store.ErrUndecodable, err)
				}
				out = append(out, r)
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.Rule) int {
		pa, pb := store.RulePositionOf(a), store.RulePositionOf(b)
		switch {
		case pa.Before(pb):
			return -1
		case pb.Before(pa):
			return 1
		}
		return 0
	})
	return out, err
}

// ruleIDOf is the rule id of a scope key whose tenant part is tenantLen bytes long.
func ruleIDOf(key []byte, tenantLen int) ([]byte, bool) {
	rest := key[tenantLen:]
	n, size := binary.Uvarint(rest)
	if size <= 0 || uint64(len(rest)-size) < n {
		return nil, false
	}
	return rest[size+int(n):], true
}
