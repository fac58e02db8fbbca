-- Erasing a conversation (issue 48, DELETE /v1/conversations/{id}; backend/store/erasure.go):
-- the tombstones, and two functions that make an erasure exact against a start on any node.
--
-- The exactness comes from row locks on the conversation's row, as a foreign key's check would
-- take them (a foreign key itself is not added: executions of databases written before this
-- migration, and of the store's own contract suite, may name a conversation without a row, and
-- a VALIDATE would fail the upgrade of such a database):
--   * harness_erase_conversation locks the row FOR UPDATE, and only then — in statements of
--     its own, each with a fresh snapshot — reads the executions' states and deletes;
--   * every commit that writes an execution or a conversation record first calls
--     harness_conversations_open, which locks their rows FOR KEY SHARE and then looks for a
--     tombstone. A start that locked first makes the erasure wait for its COMMIT and then see
--     the new execution (busy); an erasure that locked first makes the start wait, find the
--     row gone and the tombstone there (gone). A FOR KEY SHARE lock does not conflict with
--     another one, nor with a rename's update: starts never wait for each other.

-- +goose Up
CREATE TABLE conversation_tombstones (
    conversation_id text COLLATE "C" PRIMARY KEY,
    tenant          text NOT NULL,
    deleted_at      timestamptz NOT NULL,
    executions      integer NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION harness_conversations_open(locked text[], checked text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    gone text;
BEGIN
    PERFORM 1 FROM conversations WHERE id = ANY(locked) ORDER BY id FOR KEY SHARE;
    SELECT conversation_id INTO gone FROM conversation_tombstones
        WHERE conversation_id = ANY(locked) OR conversation_id = ANY(checked) LIMIT 1;
    IF gone IS NOT NULL THEN
        RAISE EXCEPTION 'conversation % was deleted', gone USING ERRCODE = 'HE003';
    END IF;
END
$$;
-- +goose StatementEnd

-- harness_erase_conversation erases what the database holds of a conversation (all but the
-- provider state, whose keys the runtime names, and the stream log's marker, numbered by the
-- commit's last statement) and returns the number of executions erased. Usage rows stay,
-- under an id of their own and without the conversation: sums do not change.
-- +goose StatementBegin
CREATE FUNCTION harness_erase_conversation(conv text, conv_tenant text, erased_at timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    busy text;
    execs text[];
    action_ids text[];
BEGIN
    PERFORM 1 FROM conversations WHERE id = conv AND tenant = conv_tenant FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'conversation % does not exist or was deleted', conv USING ERRCODE = 'HE003';
    END IF;
    SELECT id INTO busy FROM executions
        WHERE tenant = conv_tenant AND conversation_id = conv AND state NOT IN ('succeeded', 'failed', 'cancelled')
        LIMIT 1;
    IF busy IS NOT NULL THEN
        RAISE EXCEPTION 'execution % of conversation % has not ended', busy, conv USING ERRCODE = 'HE004';
    END IF;
    SELECT coalesce(array_agg(id), '{}') INTO execs FROM executions
        WHERE tenant = conv_tenant AND conversation_id = conv;
    SELECT coalesce(array_agg(a), '{}') INTO action_ids
        FROM executions, json_array_elements_text(coalesce(record->'actionIds', '[]'::json)) a
        WHERE id = ANY(execs);
    DELETE FROM events WHERE execution_id = ANY(execs);
    DELETE FROM artifacts WHERE execution_id = ANY(execs);
    DELETE FROM checkpoints WHERE execution_id = ANY(execs);
    DELETE FROM webhook_outbox WHERE execution_id = ANY(execs);
    DELETE FROM webhook_failed WHERE execution_id = ANY(execs);
    DELETE FROM commands WHERE execution_id = ANY(execs);
    DELETE FROM actions WHERE id = ANY(action_ids);
    DELETE FROM idempotency WHERE tenant = conv_tenant AND conversation_id = conv;
    DELETE FROM action_rules WHERE tenant = conv_tenant AND conversation_id = conv;
    DELETE FROM stream_log WHERE conversation_id = conv AND execution_id <> '';
    UPDATE execution_usage SET execution_id = 'erased_' || replace(gen_random_uuid()::text, '-', ''), conversation_id = ''
        WHERE execution_id = ANY(execs);
    DELETE FROM executions WHERE id = ANY(execs);
    DELETE FROM conversations WHERE id = conv;
    INSERT INTO conversation_tombstones (conversation_id, tenant, deleted_at, executions)
        VALUES (conv, conv_tenant, erased_at, cardinality(execs));
    RETURN cardinality(execs);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION harness_erase_conversation(text, text, timestamptz);
DROP FUNCTION harness_conversations_open(text[], text[]);
DROP TABLE conversation_tombstones;
