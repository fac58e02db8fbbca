-- Fencing (docs/scale-out.md, "Fencing"): each node's lease has an epoch, a token that grows every
-- time the node acquires its lease (at each start). Every commit of a node's executions carries
-- the epoch it was made under and is applied only while that node still holds it: the commit
-- takes a share lock on the node's lease row and checks it (harness_fence, below), so a claim
-- by another node (ClaimExpired updates the row) and the claimed node's commits are serialized:
-- whatever comes after the claim fails, with SQLSTATE HE001 (store.ErrFenced).

-- +goose Up
ALTER TABLE nodes ADD COLUMN epoch bigint NOT NULL DEFAULT 1;

-- +goose StatementBegin
CREATE FUNCTION harness_fence(node_name text, lease_epoch bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM nodes
        WHERE name = node_name AND epoch = lease_epoch AND claimed_by IS NULL
        FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'node % no longer holds lease epoch %', node_name, lease_epoch
            USING ERRCODE = 'HE001';
    END IF;
END
$$;
-- +goose StatementEnd

-- A commit retried after a transient failure may already have been applied (the connection was
-- lost during COMMIT): it then inserts its idempotency records with ON CONFLICT DO NOTHING and
-- calls this check, which refuses (SQLSTATE HE002, store.ErrConflict) a key that another
-- execution holds, while its own earlier row passes.
-- +goose StatementBegin
CREATE FUNCTION harness_idempotency_check(tenants text[], convs text[], keys bytea[], execs text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM idempotency i
               JOIN unnest(tenants, convs, keys, execs) AS w(tenant, conv, key, exec)
                 ON i.tenant = w.tenant AND i.conversation_id = w.conv AND i.key = w.key
               WHERE i.execution_id <> w.exec) THEN
        RAISE EXCEPTION 'idempotency key already bound to another execution' USING ERRCODE = 'HE002';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION harness_idempotency_check(text[], text[], bytea[], text[]);
DROP FUNCTION harness_fence(text, bigint);
ALTER TABLE nodes DROP COLUMN epoch;
