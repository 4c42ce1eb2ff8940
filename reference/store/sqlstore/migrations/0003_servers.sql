-- Upstream MCP servers registered whole (store.Server); prices and read_only
-- are JSON ('' when none).
CREATE TABLE servers (
	name      TEXT PRIMARY KEY,
	url       TEXT NOT NULL,
	prefix    TEXT NOT NULL,
	price     {{int64}} NOT NULL,
	prices    TEXT NOT NULL,
	read_only TEXT NOT NULL
);
