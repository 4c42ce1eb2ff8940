-- The tool registry's version: every write to tools raises it in the same
-- transaction. A gateway process keeps the tool entries it read, each with
-- the version it was read at, and uses one only while the version it reads
-- with a request's API key is the same: one read per request still sees
-- every tool change any process made, and a replay reads no tool at all.
CREATE TABLE tool_registry (
	id      {{int64}} PRIMARY KEY CHECK (id = 1),
	version {{int64}} NOT NULL
);
INSERT INTO tool_registry (id, version) VALUES (1, 1);
