-- The stream log behind the conversation and tenant streams (issue 36; docs/storage.md, "The
-- stream log"): one row per committed event, numbered in the transaction that writes it. The
-- number is taken from stream_log_state.last by an UPDATE at the very end of the writing
-- transaction, so the row lock is held only from there to COMMIT: transactions number their
-- events in the order they commit, and a reader of "position > cursor" can never see a later
-- position before an earlier one commits. The log's own row names its event (execution,
-- sequence) and the scope streams select it by; the event's value stays in events.

-- +goose Up
CREATE TABLE stream_log (
    position        bigint PRIMARY KEY,
    execution_id    text NOT NULL,
    sequence        bigint NOT NULL,
    type            text NOT NULL,
    tenant          text NOT NULL,
    conversation_id text NOT NULL,
    provider_id     text NOT NULL,
    committed_at    timestamptz NOT NULL DEFAULT now()
);
-- A conversation's stream is a seek in this index.
CREATE INDEX stream_log_conversation ON stream_log (conversation_id, position);

CREATE TABLE stream_log_state (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id        text NOT NULL,   -- the log's identity, random: cursors carry a tag derived from it
    last      bigint NOT NULL, -- the last position taken (committed with its rows)
    oldest    bigint NOT NULL  -- the first position kept (trimming moves it)
);
INSERT INTO stream_log_state (id, last, oldest) VALUES (replace(gen_random_uuid()::text, '-', ''), 0, 1);

-- +goose Down
DROP TABLE stream_log_state;
DROP TABLE stream_log;
