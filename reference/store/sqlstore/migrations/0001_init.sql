-- One schema for both stores: a type in double braces is named by the role
-- its column plays, and each store's dialect gives the type (Dialect.Types).
-- Times are Unix nanoseconds from the gateway's clock; nothing here defaults
-- to the database's own time. Keys the API orders by are ordered_text, so
-- the order is bytewise whatever the database's locale.

CREATE TABLE wallets (
	id         TEXT PRIMARY KEY,
	balance    {{int64}} NOT NULL,
	created_at {{int64}} NOT NULL
);

CREATE TABLE api_keys (
	id          TEXT PRIMARY KEY,
	wallet_id   TEXT NOT NULL REFERENCES wallets (id),
	secret_hash {{bytes}} NOT NULL,
	created_at  {{int64}} NOT NULL
);

CREATE TABLE principals (
	id       TEXT PRIMARY KEY,
	provider TEXT NOT NULL,
	issuer   TEXT NOT NULL,
	subject  TEXT NOT NULL,
	tools    {{json}} NOT NULL, -- array of tool names
	revoked  {{bool}} NOT NULL,
	UNIQUE (provider, issuer, subject)
);

CREATE TABLE trusts (
	provider {{ordered_text}} NOT NULL,
	issuer   {{ordered_text}} NOT NULL,
	jwks_url TEXT NOT NULL,
	audience TEXT NOT NULL,
	PRIMARY KEY (provider, issuer)
);

CREATE TABLE tools (
	name          {{ordered_text}} PRIMARY KEY,
	description   TEXT NOT NULL,
	price         {{int64}} NOT NULL,
	read_only     {{bool}} NOT NULL,
	approval      {{bool}} NOT NULL,
	upstream_url  TEXT NOT NULL,
	upstream_tool TEXT NOT NULL,
	removed       {{bool}} NOT NULL
);

CREATE TABLE permits (
	id         TEXT PRIMARY KEY,
	wallet_id  TEXT NOT NULL REFERENCES wallets (id),
	api_key_id TEXT NOT NULL,
	tool       TEXT NOT NULL,
	budget     {{int64}} NOT NULL,
	spent      {{int64}} NOT NULL,
	expires_at {{int64}} NOT NULL,
	auto       {{bool}} NOT NULL,
	record_key TEXT NOT NULL,
	created_at {{int64}} NOT NULL
);
CREATE INDEX permits_record_key ON permits (record_key);

CREATE TABLE locks (
	identity    {{ordered_text}} PRIMARY KEY,
	owner       TEXT NOT NULL,
	fence       {{int64}} NOT NULL,
	acquired_at {{int64}} NOT NULL
);

CREATE TABLE records (
	key         TEXT PRIMARY KEY,
	kind        TEXT NOT NULL,
	client_key  TEXT NOT NULL,
	wallet_id   TEXT NOT NULL,
	api_key_id  TEXT NOT NULL,
	principal   TEXT NOT NULL,
	tool        TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	identity    TEXT NOT NULL,
	bucket      {{int64}} NOT NULL,
	attempt     INTEGER NOT NULL,
	state       TEXT NOT NULL,
	owner       TEXT NOT NULL,
	permit_id   TEXT NOT NULL,
	receipt     TEXT NOT NULL,
	result      {{verbatim}}, -- the stored CallToolResult, byte for byte
	charged     {{bool}} NOT NULL,
	created_at  {{int64}} NOT NULL,
	updated_at  {{int64}} NOT NULL
);
CREATE INDEX records_identity ON records (identity, bucket, attempt);

-- seq keeps insertion order for entries that share a time.
CREATE TABLE ledger_entries (
	seq        {{seq}},
	id         TEXT NOT NULL UNIQUE,
	wallet_id  TEXT NOT NULL REFERENCES wallets (id),
	kind       TEXT NOT NULL,
	amount     {{int64}} NOT NULL,
	record_key TEXT NOT NULL,
	receipt    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	at         {{int64}} NOT NULL
);
CREATE INDEX ledger_entries_wallet ON ledger_entries (wallet_id, at, seq);

CREATE TABLE dispatches (
	seq         {{seq}},
	id          TEXT NOT NULL UNIQUE,
	tool        TEXT NOT NULL,
	record_key  TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	wallet_id   TEXT NOT NULL,
	at          {{int64}} NOT NULL
);

CREATE TABLE notes (
	id        {{seq}},
	wallet_id TEXT NOT NULL,
	text      TEXT NOT NULL,
	at        {{int64}} NOT NULL
);
CREATE INDEX notes_wallet ON notes (wallet_id);
