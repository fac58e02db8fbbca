-- Sealing a conversation ahead of its erasure (issue 48, DELETE /v1/conversations/{id}
-- ?cancel=true; backend/store/seal.go): from the seal on, no execution starts in it and it is
-- not renamed, so the delete's cancels end with nothing new behind them.
--
-- The seal rides on the lock of migration 00012: harness_seal_conversation locks the
-- conversation's row FOR UPDATE, which waits for every start holding it FOR KEY SHARE
-- (harness_conversations_open) to commit — those executions are then there for the delete to
-- cancel — and makes every later start wait for the seal's COMMIT. The start then runs
-- harness_conversations_unsealed, a statement of its own with a fresh snapshot, which sees the
-- seal. An execution the database already holds is not a start: it may still change state,
-- so that it can end.
--
-- A seal's row goes with its conversation's (ON DELETE CASCADE): the erasure removes it, and
-- harness_erase_conversation needs no change. Nodes of an older release do not call
-- harness_conversations_unsealed: during a rolling upgrade their starts are not refused by a
-- seal (a delete stays exact, as before 00013, but not live against them).

-- +goose Up
CREATE TABLE conversation_seals (
    conversation_id text COLLATE "C" PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    tenant          text NOT NULL,
    sealed_at       timestamptz NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION harness_seal_conversation(conv text, conv_tenant text, sealed timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM conversations WHERE id = conv AND tenant = conv_tenant FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'conversation % does not exist or was deleted', conv USING ERRCODE = 'HE003';
    END IF;
    INSERT INTO conversation_seals (conversation_id, tenant, sealed_at) VALUES (conv, conv_tenant, sealed)
        ON CONFLICT (conversation_id) DO NOTHING; -- a retried delete keeps the first seal
END
$$;
-- +goose StatementEnd

-- harness_conversations_unsealed fails (HE005) when a record of renamed, or an execution of
-- exec_ids (in conversation exec_convs[i]) that the database does not hold yet, is of a sealed
-- conversation. Called after harness_conversations_open has locked their rows.
-- +goose StatementBegin
CREATE FUNCTION harness_conversations_unsealed(renamed text[], exec_ids text[], exec_convs text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    sealed text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM conversation_seals
                   WHERE conversation_id = ANY(renamed) OR conversation_id = ANY(exec_convs)) THEN
        RETURN; -- the common case: nothing being written is sealed
    END IF;
    SELECT s.conversation_id INTO sealed FROM conversation_seals s
        WHERE s.conversation_id = ANY(renamed)
           OR s.conversation_id IN (SELECT w.conv FROM unnest(exec_ids, exec_convs) AS w(id, conv)
                                    WHERE NOT EXISTS (SELECT 1 FROM executions x WHERE x.id = w.id))
        LIMIT 1;
    IF sealed IS NOT NULL THEN
        RAISE EXCEPTION 'conversation % is being deleted', sealed USING ERRCODE = 'HE005';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION harness_conversations_unsealed(text[], text[], text[]);
DROP FUNCTION harness_seal_conversation(text, text, timestamptz);
DROP TABLE conversation_seals;
