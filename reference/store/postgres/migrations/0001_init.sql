-- Times are Unix nanoseconds from the gateway's clock; nothing here defaults
-- to now(). Keys the API orders by use COLLATE "C" so the order is bytewise,
-- as in SQLite, whatever the database's locale.

CREATE TABLE wallets (
	id         TEXT PRIMARY KEY,
	balance    BIGINT NOT NULL,
	created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
	id          TEXT PRIMARY KEY,
	wallet_id   TEXT NOT NULL REFERENCES wallets (id),
	secret_hash BYTEA NOT NULL,
	created_at  BIGINT NOT NULL
);

CREATE TABLE principals (
	id       TEXT PRIMARY KEY,
	provider TEXT NOT NULL,
	issuer   TEXT NOT NULL,
	subject  TEXT NOT NULL,
	tools    JSONB NOT NULL, -- array of tool names
	revoked  BOOLEAN NOT NULL,
	UNIQUE (provider, issuer, subject)
);

CREATE TABLE trusts (
	provider TEXT COLLATE "C" NOT NULL,
	issuer   TEXT COLLATE "C" NOT NULL,
	jwks_url TEXT NOT NULL,
	audience TEXT NOT NULL,
	PRIMARY KEY (provider, issuer)
);

CREATE TABLE tools (
	name          TEXT COLLATE "C" PRIMARY KEY,
	description   TEXT NOT NULL,
	price         BIGINT NOT NULL,
	read_only     BOOLEAN NOT NULL,
	approval      BOOLEAN NOT NULL,
	upstream_url  TEXT NOT NULL,
	upstream_tool TEXT NOT NULL,
	removed       BOOLEAN NOT NULL
);

CREATE TABLE permits (
	id         TEXT PRIMARY KEY,
	wallet_id  TEXT NOT NULL REFERENCES wallets (id),
	api_key_id TEXT NOT NULL,
	tool       TEXT NOT NULL,
	budget     BIGINT NOT NULL,
	spent      BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	auto       BOOLEAN NOT NULL,
	record_key TEXT NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE INDEX permits_record_key ON permits (record_key);

CREATE TABLE locks (
	identity    TEXT COLLATE "C" PRIMARY KEY,
	owner       TEXT NOT NULL,
	fence       BIGINT NOT NULL,
	acquired_at BIGINT NOT NULL
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
	bucket      BIGINT NOT NULL,
	attempt     INTEGER NOT NULL,
	state       TEXT NOT NULL,
	owner       TEXT NOT NULL,
	permit_id   TEXT NOT NULL,
	receipt     TEXT NOT NULL,
	result      BYTEA, -- the stored CallToolResult, byte for byte (jsonb would reformat it)
	charged     BOOLEAN NOT NULL,
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL
);
CREATE INDEX records_identity ON records (identity, bucket, attempt);

-- seq keeps insertion order for entries that share a time.
CREATE TABLE ledger_entries (
	seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         TEXT NOT NULL UNIQUE,
	wallet_id  TEXT NOT NULL REFERENCES wallets (id),
	kind       TEXT NOT NULL,
	amount     BIGINT NOT NULL,
	record_key TEXT NOT NULL,
	receipt    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	at         BIGINT NOT NULL
);
CREATE INDEX ledger_entries_wallet ON ledger_entries (wallet_id, at, seq);

CREATE TABLE dispatches (
	seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	tool        TEXT NOT NULL,
	record_key  TEXT NOT NULL,
	fingerprint TEXT NOT NULL,
	wallet_id   TEXT NOT NULL,
	at          BIGINT NOT NULL
);

CREATE TABLE notes (
	id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	wallet_id TEXT NOT NULL,
	text      TEXT NOT NULL,
	at        BIGINT NOT NULL
);
CREATE INDEX notes_wallet ON notes (wallet_id);
