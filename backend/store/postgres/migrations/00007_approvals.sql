-- Approvals (store.ActionRecords, docs/storage.md): the inbox of pending actions per tenant, the
-- deadlines of actions that expire, and standing rules.
--
-- The inbox and the deadlines are columns the database derives from the action's record
-- (generated, stored), with partial indexes over the pending ones: the commit that answers or
-- abandons an action rewrites its record, and with it these columns, so an action leaves the
-- inbox and the deadlines in that very commit, whichever node wrote it. Timestamps are the
-- runtime's fixed-width UTC text (three fractional digits, `Z`): they sort as they compare.

-- The tenant, conversation and provider of an action are its execution's (a join): action records
-- written before this migration do not name them.

-- +goose Up
ALTER TABLE actions
    ADD COLUMN pending_since text COLLATE "C"
        GENERATED ALWAYS AS (CASE WHEN record->>'status' = 'pending' THEN record->'request'->>'createdAt' END) STORED,
    ADD COLUMN expires_at text COLLATE "C"
        GENERATED ALWAYS AS (CASE WHEN record->>'status' = 'pending' THEN record->'request'->>'expiresAt' END) STORED;
CREATE INDEX actions_pending ON actions (pending_since, id) WHERE pending_since IS NOT NULL;
CREATE INDEX actions_expiring ON actions (expires_at, id) WHERE expires_at IS NOT NULL;

-- A rule is never deleted (a revocation rewrites it): an answer that names it stays explained.
CREATE TABLE action_rules (
    id              text COLLATE "C" PRIMARY KEY,
    tenant          text NOT NULL DEFAULT '',
    conversation_id text COLLATE "C" NOT NULL DEFAULT '',
    created_at      text COLLATE "C" NOT NULL,
    record          json NOT NULL
);
CREATE INDEX action_rules_by_scope ON action_rules (tenant, conversation_id);

-- +goose Down
DROP TABLE action_rules;
DROP INDEX actions_expiring, actions_pending;
ALTER TABLE actions DROP COLUMN expires_at, DROP COLUMN pending_since;
