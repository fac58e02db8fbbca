-- Usage for sums (docs/usage.md, store.ExecutionUsage): each execution's cumulative usage, put
-- in the transaction that writes the execution record carrying the same usage. A put replaces
-- the row (cumulative values: a commit retried after it was applied, or a takeover continuing
-- from the stored value, counts nothing twice), and never lowers it. Sums over a tenant's range
-- of creation times read the index below. Rows outlive their executions: retention does not
-- delete them (what was spent stays spent).

-- +goose Up
CREATE TABLE execution_usage (
    execution_id        text COLLATE "C" PRIMARY KEY,
    tenant              text NOT NULL,
    conversation_id     text COLLATE "C" NOT NULL,
    provider_id         text NOT NULL,
    created_ms          bigint NOT NULL,
    input_tokens        bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    cached_read_tokens  bigint NOT NULL DEFAULT 0,
    cached_write_tokens bigint NOT NULL DEFAULT 0,
    thought_tokens      bigint NOT NULL DEFAULT 0,
    total_tokens        bigint NOT NULL DEFAULT 0,
    cost_micros         bigint NOT NULL DEFAULT 0,
    currency            text NOT NULL DEFAULT ''
);
CREATE INDEX execution_usage_by_tenant_time ON execution_usage (tenant, created_ms);

-- +goose Down
DROP TABLE execution_usage;
