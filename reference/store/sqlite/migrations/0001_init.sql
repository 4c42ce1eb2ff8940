-- Times are Unix nanoseconds from the gateway's clock; nothing here defaults
-- to the database's own time.

CREATE TABLE wallets (
	id         TEXT PRIMARY KEY,
	balance    INTEGER NOT NULL,
	created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
	id          TEXT PRIMARY KEY,
	wallet_id   TEXT NOT NULL REFERENCES wallets (id),
	secret_hash BLOB NOT NULL,
	created_at  INTEGER NOT NULL
);

CREATE TABLE principals (
	id       TEXT PRIMARY KEY,
	provider TEXT NOT NULL,
	issuer   TEXT NOT NULL,
	subject  TEXT NOT NULL,
	tools    TEXT NOT NULL, -- JSON array of tool names
	revoked  INTEGER NOT NULL,
	UNIQUE (provider, issuer, subject)
);

CREATE TABLE trusts (
	provider  TEXT NOT NULL,
	issuer    TEXT NOT NULL,
	jwks_url  TEXT NOT NULL,
	audience  TEXT NOT NULL,
	PRIMARY KEY (provider, issuer)
);

CREATE TABLE tools (
	name          TEXT PRIMARY KEY,
	description   TEXT NOT NULL,
	price         INTEGER NOT NULL,
	read_only     INTEGER NOT NULL,
	approval      INTEGER NOT NULL,
	upstream_url  TEXT NOT NULL,
	upstream_tool TEXT NOT NULL,
	removed       INTEGER NOT NULL
);

CREATE TABLE permits (
	id         TEXT PRIMARY KEY,
	wallet_id  TEXT NOT NULL REFERENCES wallets (id),
	api_key_id TEXT NOT NULL,
	tool       TEXT NOT NULL,
	budget     INTEGER NOT NULL,
	spent      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	auto       INTEGER NOT NULL,
	record_key TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE INDEX permits_record_key ON permits (record_key);

CREATE TABLE locks (
	identity    TEXT PRIMARY KEY,
	owner       TEXT NOT NULL,
	fence       INTEGER NOT NULL,
	acquired_at INTEGER NOT NULL
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
	bucket      INTEGER NOT NULL,
	attempt     INTEGER NOT NULL,
	state       TEXT NOT NULL,
	owner       TEXT NOT NULL,
	permit_id   TEXT NOT NULL,
	receipt     TEXT NOT NULL,
	result      TEXT, -- the stored CallToolResult, byte for byte
	charged     INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE INDEX records_identity ON records (identity, bucket, attempt);

-- seq keeps insertion order for entries that share a time.
CREATE TABLE ledger_entries (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	id         TEXT NOT NULL UNIQUE,
	wallet_id  TEXT NOT NULL REFERENCES wallets (id),
	kind       TEXT NOT NULL,
	amount     INTEGER NOT NULL,
	record_key TEXT NOT NULL,
	receipt    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	at         INTEGER NOT NULL
);
CREATE INDEX ledger_entries_wallet ON ledger_entries (wallet_id, at, seq);

CREATE TABLE dispatches (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	id          TEXT NOT NULL UNIQUE,
	tool        TEXT NOT NULL,
	record_key  TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	wallet_id   TEXT NOT NULL,
	at          INTEGER NOT NULL
);

CREATE TABLE notes (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	wallet_id TEXT NOT NULL,
	text      TEXT NOT NULL,
	at        INTEGER NOT NULL
);
CREATE INDEX notes_wallet ON notes (wallet_id);
