-- Renewals never wait for commits (issue 44): the fence of every commit (harness_fence,
-- migration 2) took a FOR SHARE lock on its node's lease row, which a renewal's UPDATE of
-- expires_at (FOR NO KEY UPDATE) must wait for. A node committing back to back under overload
-- kept that row share-locked almost without a gap — a waiting updater does not stop new share
-- lockers — so its own renewals starved, its lease lapsed while it was alive, and another node
-- took it over. The fence now takes FOR KEY SHARE, which a renewal does not conflict with; the
-- operations that must be ordered with the commits of a node, the claim and the acquisition
-- of a new epoch, take FOR UPDATE (backend/store/postgres/cluster.go), which still waits for
-- every commit holding the fence, and which every later fence waits for and then fails.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION harness_fence(node_name text, lease_epoch bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM nodes
        WHERE name = node_name AND epoch = lease_epoch AND claimed_by IS NULL
        FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'node % no longer holds lease epoch %', node_name, lease_epoch
            USING ERRCODE = 'HE001';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION harness_fence(node_name text, lease_epoch bigint) RETURNS void
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
