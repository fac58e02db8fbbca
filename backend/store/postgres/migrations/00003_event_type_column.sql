-- The store keeps an event's type as a column of its own (issue 26): reads no longer parse
-- the tail of the wire JSON (data, still handed back byte for byte). Rows written before get
-- their type from their JSON, once; a row whose JSON cannot be read gets '' and stays
-- undecodable to readers (store.ErrUndecodable), as it was.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION harness_event_type_of(data bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN coalesce(convert_from(data, 'UTF8')::json->>'type', '');
EXCEPTION WHEN others THEN
    RETURN '';
END
$$;
-- +goose StatementEnd
ALTER TABLE events ADD COLUMN type text;
UPDATE events SET type = harness_event_type_of(data);
ALTER TABLE events ALTER COLUMN type SET NOT NULL;
DROP FUNCTION harness_event_type_of(bytea);

-- +goose Down
ALTER TABLE events DROP COLUMN type;
