-- The PostgreSQL store's schema (package backend/store/postgres). Applied by Open with goose,
-- under a session advisory lock, so nodes starting together apply it once.
--
-- Ids are COLLATE "C": listings order by id as the bbolt store does (byte order), whatever the
-- database's default collation. Records are the store package's JSON, kept as `json` (the exact
-- text: byte-compatible with bbolt's records, and still queryable with ->>); events are the wire
-- JSON as bytea, handed back byte for byte. Keys a client chooses (idempotency keys, provider
-- state keys) are bytea: they may hold any character, NUL included, which text cannot.

-- +goose Up
CREATE TABLE conversations (
    id     text COLLATE "C" PRIMARY KEY,
    tenant text NOT NULL DEFAULT '',
    record json NOT NULL
);

CREATE TABLE executions (
    id              text COLLATE "C" PRIMARY KEY,
    tenant          text NOT NULL DEFAULT '',
    conversation_id text COLLATE "C" NOT NULL,
    state           text NOT NULL,
    -- owner is the node responsible for the execution: the one that started it, or the node
    -- that claimed it after the owner's lease expired (ClaimExpired).
    owner           text NOT NULL DEFAULT '',
    -- created_ms is store.PositionOf's CreatedMs: the listing order, newest first.
    created_ms      bigint NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    record          json NOT NULL
);
CREATE INDEX executions_by_tenant_time ON executions (tenant, created_ms DESC, id DESC);
CREATE INDEX executions_by_conversation_time ON executions (tenant, conversation_id, created_ms DESC, id DESC);
CREATE INDEX executions_running_by_owner ON executions (owner)
    WHERE state NOT IN ('succeeded', 'failed', 'cancelled');

CREATE TABLE events (
    execution_id text COLLATE "C" NOT NULL,
    sequence     bigint NOT NULL,
    data         bytea NOT NULL,
    PRIMARY KEY (execution_id, sequence)
);

CREATE TABLE artifacts (
    execution_id text COLLATE "C" NOT NULL,
    idx          integer NOT NULL,
    record       json NOT NULL,
    PRIMARY KEY (execution_id, idx)
);

CREATE TABLE actions (
    id     text COLLATE "C" PRIMARY KEY,
    record json NOT NULL
);

CREATE TABLE idempotency (
    tenant          text NOT NULL,
    conversation_id text COLLATE "C" NOT NULL,
    key             bytea NOT NULL,
    execution_id    text COLLATE "C" NOT NULL,
    record          json NOT NULL,
    -- The database enforces idempotent start: a second record for the key fails the whole
    -- commit (store.ErrConflict), whichever node tried.
    CONSTRAINT idempotency_key PRIMARY KEY (tenant, conversation_id, key)
);
CREATE INDEX idempotency_by_execution ON idempotency (execution_id);

CREATE TABLE checkpoints (
    execution_id text COLLATE "C" PRIMARY KEY,
    data         bytea NOT NULL
);

CREATE TABLE provider_state (
    key   bytea PRIMARY KEY,
    value bytea NOT NULL
);

-- The webhook outbox. A lane is (execution_id, target); its head is its lowest sequence. A
-- sender claims a head (claimed_by, claimed_until) before sending it, so each row goes to one
-- sender at a time across nodes; a crashed sender's claim expires.
CREATE TABLE webhook_outbox (
    execution_id  text COLLATE "C" NOT NULL,
    target        bytea NOT NULL,
    sequence      bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    next_attempt  timestamptz NOT NULL,
    claimed_by    text,
    claimed_until timestamptz,
    notification  json NOT NULL,
    PRIMARY KEY (execution_id, target, sequence)
);

CREATE TABLE webhook_failed (
    execution_id text COLLATE "C" NOT NULL,
    target       bytea NOT NULL,
    sequence     bigint NOT NULL,
    notification json NOT NULL,
    PRIMARY KEY (execution_id, sequence, target)
);

-- Node leases (store.Cluster). expires_at is set from the database's clock, never a node's.
CREATE TABLE nodes (
    name       text PRIMARY KEY,
    expires_at timestamptz NOT NULL,
    claimed_by text,
    claimed_at timestamptz
);

-- Commands to an execution's owner (cancel, respond) and their answers.
CREATE TABLE commands (
    id           bigserial PRIMARY KEY,
    node         text NOT NULL,
    kind         text NOT NULL,
    execution_id text COLLATE "C" NOT NULL,
    action_id    text NOT NULL DEFAULT '',
    body         bytea,
    result       bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    answered_at  timestamptz
);
CREATE INDEX commands_pending ON commands (node, id) WHERE answered_at IS NULL;

-- +goose Down
DROP TABLE commands, nodes, webhook_failed, webhook_outbox, provider_state, checkpoints,
    idempotency, actions, artifacts, events, executions, conversations;
