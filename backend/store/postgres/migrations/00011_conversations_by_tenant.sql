-- The conversations listing (issue 48, docs/protocol.md "Conversations") walks one tenant's
-- conversations: this index spares it a scan of every tenant's.

-- +goose Up
CREATE INDEX conversations_by_tenant ON conversations (tenant, id);

-- +goose Down
DROP INDEX conversations_by_tenant;
