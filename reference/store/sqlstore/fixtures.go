package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// exec runs one statement in a write transaction of its own; missing, when
// not nil, is the error when it touches no row.
func (c *Core) exec(ctx context.Context, op string, missing error, query string, args ...any) error {
	return c.execThen(ctx, op, missing, nil, query, args...)
}

// execThen is exec, with then (when not nil) run in the same transaction
// once the statement succeeded.
func (c *Core) execThen(ctx context.Context, op string, missing error, then func(context.Context, Querier) error, query string, args ...any) error {
	err := c.db.Write(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, query, args...)
		switch {
		case err != nil:
			return err
		case n == 0 && missing != nil:
			return missing
		case then != nil:
			return then(ctx, q)
		}
		return nil
	})
	return c.d.Wrap(op, err)
}

// CreateWallet inserts a wallet; ErrExists if its id is taken.
func (c *Core) CreateWallet(ctx context.Context, w store.Wallet) error {
	return c.exec(ctx, "create wallet", nil, `INSERT INTO wallets (id, balance, created_at) VALUES ($1, $2, $3)`,
		w.ID, w.Balance, Nanos(w.CreatedAt))
}

// Wallet reads a wallet.
func (c *Core) Wallet(ctx context.Context, id string) (store.Wallet, error) {
	var w store.Wallet
	var created int64
	err := c.db.Read().QueryRow(ctx, `SELECT id, balance, created_at FROM wallets WHERE id = $1`, id).
		Scan(&w.ID, &w.Balance, &created)
	w.CreatedAt = FromNanos(created)
	return w, c.d.Wrap("wallet", err)
}

// Credit adds e.Amount to the wallet and records the credit entry.
func (c *Core) Credit(ctx context.Context, e store.LedgerEntry) error {
	return c.giveBack(ctx, "credit", e, store.EntryCredit)
}

// AppendRefund gives e.Amount back to the wallet with no condition at all
// (the uncertain-refunded bug): not the record's state, not whether its
// debit was refunded already.
func (c *Core) AppendRefund(ctx context.Context, e store.LedgerEntry) error {
	return c.giveBack(ctx, "append refund", e, store.EntryRefund)
}

// giveBack adds e.Amount, an entry of kind, to the wallet and records it.
func (c *Core) giveBack(ctx context.Context, op string, e store.LedgerEntry, kind string) error {
	e, err := Entry(e, kind)
	if err != nil {
		return c.d.Wrap(op, err)
	}
	err = c.db.Write(ctx, func(q Querier) error {
		return MoveBalance(ctx, q, e, e.Amount)
	})
	return c.d.Wrap(op, err)
}

// AppendDebit takes e.Amount off the wallet with no condition at all.
func (c *Core) AppendDebit(ctx context.Context, e store.LedgerEntry) error {
	kind := store.EntryDebit
	if e.Kind == store.EntryFee {
		kind = store.EntryFee // takes money off like a debit (the refusal-fee bug)
	}
	e, err := Entry(e, kind)
	if err != nil {
		return c.d.Wrap("append debit", err)
	}
	err = c.db.Write(ctx, func(q Querier) error {
		return MoveBalance(ctx, q, e, -e.Amount)
	})
	return c.d.Wrap("append debit", err)
}

// Entry checks e is of kind and fills the defaults a caller may leave out.
func Entry(e store.LedgerEntry, kind string) (store.LedgerEntry, error) {
	if e.Kind == "" {
		e.Kind = kind
	}
	if e.Kind != kind {
		return e, fmt.Errorf("entry kind %q, want %q", e.Kind, kind)
	}
	if e.Amount < 0 {
		return e, fmt.Errorf("negative amount %d", e.Amount)
	}
	e.ID = NewID(e.ID)
	return e, nil
}

// MoveBalance changes the wallet's balance by delta and writes e.
func MoveBalance(ctx context.Context, q Querier, e store.LedgerEntry, delta int64) error {
	if err := ExecOne(ctx, q, fmt.Errorf("wallet %q: %w", e.WalletID, store.ErrNotFound),
		`UPDATE wallets SET balance = balance + $1 WHERE id = $2`, delta, e.WalletID); err != nil {
		return err
	}
	return InsertEntry(ctx, q, e)
}

// InsertEntry writes a ledger entry as it is.
func InsertEntry(ctx context.Context, q Querier, e store.LedgerEntry) error {
	_, err := q.Exec(ctx, `INSERT INTO ledger_entries (id, wallet_id, kind, amount, record_key, receipt, tool, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.ID, e.WalletID, e.Kind, e.Amount, e.RecordKey, e.Receipt, e.Tool, Nanos(e.At))
	return err
}

// Ledger lists the wallet's entries by time, then insertion.
func (c *Core) Ledger(ctx context.Context, walletID string) ([]store.LedgerEntry, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT id, wallet_id, kind, amount, record_key, receipt, tool, at
		FROM ledger_entries WHERE wallet_id = $1 ORDER BY at, seq`, walletID)
	out, err := Collect(rows, err, func(r Row) (store.LedgerEntry, error) {
		var e store.LedgerEntry
		var at int64
		err := r.Scan(&e.ID, &e.WalletID, &e.Kind, &e.Amount, &e.RecordKey, &e.Receipt, &e.Tool, &at)
		e.At = FromNanos(at)
		return e, err
	})
	if err == nil && len(out) == 0 {
		_, err = c.Wallet(ctx, walletID) // no entries, or no wallet
	}
	return out, c.d.Wrap("ledger", err)
}

// CreateAPIKey inserts a key; ErrNotFound if its wallet is missing.
func (c *Core) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	return c.exec(ctx, "create api key", nil, `INSERT INTO api_keys (id, wallet_id, secret_hash, created_at) VALUES ($1, $2, $3, $4)`,
		k.ID, k.WalletID, k.SecretHash, Nanos(k.CreatedAt))
}

// toolsVersion is the tool registry's version, as a scalar subquery: read
// in the same statement as what it goes with, it is that read's snapshot.
const toolsVersion = `(SELECT version FROM tool_registry WHERE id = 1)`

// bumpTools raises the tool registry's version; every write to tools runs
// it in its own transaction.
func bumpTools(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, `UPDATE tool_registry SET version = version + 1 WHERE id = 1`)
	return err
}

// APIKey reads a key, with the tool registry's version in the same read.
func (c *Core) APIKey(ctx context.Context, id string) (store.APIKey, error) {
	var k store.APIKey
	var created int64
	err := c.db.Read().QueryRow(ctx, `SELECT id, wallet_id, secret_hash, created_at, revoked, `+toolsVersion+` FROM api_keys WHERE id = $1`, id).
		Scan(&k.ID, &k.WalletID, &k.SecretHash, &created, &k.Revoked, &k.ToolsVersion)
	k.CreatedAt = FromNanos(created)
	return k, c.d.Wrap("api key", err)
}

// RevokeAPIKey marks a key revoked; revoking it again changes nothing.
func (c *Core) RevokeAPIKey(ctx context.Context, id string) error {
	return c.exec(ctx, "revoke api key", store.ErrNotFound, `UPDATE api_keys SET revoked = true WHERE id = $1`, id)
}

// PutPrincipal inserts or replaces a principal by id; ErrExists when another
// principal already has its provider, issuer and subject.
func (c *Core) PutPrincipal(ctx context.Context, p store.Principal) error {
	tools := p.Tools
	if tools == nil {
		tools = []string{} // the column holds an array, never null
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return c.d.Wrap("put principal", err)
	}
	// Text, not bytes: SQLite would store bytes as a BLOB, and pgx sends a
	// string to a jsonb column as the JSON it is.
	return c.exec(ctx, "put principal", nil, `INSERT INTO principals (id, provider, issuer, subject, tools, revoked)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, issuer = excluded.issuer,
		subject = excluded.subject, tools = excluded.tools, revoked = excluded.revoked`,
		p.ID, p.Provider, p.Issuer, p.Subject, string(b), p.Revoked)
}

const principalCols = `id, provider, issuer, subject, tools, revoked`

func scanPrincipal(r Row) (store.Principal, error) {
	var p store.Principal
	var tools string
	if err := r.Scan(&p.ID, &p.Provider, &p.Issuer, &p.Subject, &tools, &p.Revoked); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(tools), &p.Tools); err != nil {
		return p, fmt.Errorf("principal %q tools: %w", p.ID, err)
	}
	if len(p.Tools) == 0 {
		p.Tools = nil
	}
	return p, nil
}

// Principal finds a principal by its token's provider, issuer and subject.
func (c *Core) Principal(ctx context.Context, provider, issuer, subject string) (store.Principal, error) {
	p, err := scanPrincipal(c.db.Read().QueryRow(ctx, `SELECT `+principalCols+` FROM principals
		WHERE provider = $1 AND issuer = $2 AND subject = $3`, provider, issuer, subject))
	return p, c.d.Wrap("principal", err)
}

// PrincipalByID reads a principal.
func (c *Core) PrincipalByID(ctx context.Context, id string) (store.Principal, error) {
	p, err := scanPrincipal(c.db.Read().QueryRow(ctx, `SELECT `+principalCols+` FROM principals WHERE id = $1`, id))
	return p, c.d.Wrap("principal", err)
}

// RevokePrincipal marks a principal revoked.
func (c *Core) RevokePrincipal(ctx context.Context, id string) error {
	return c.exec(ctx, "revoke principal", store.ErrNotFound, `UPDATE principals SET revoked = true WHERE id = $1`, id)
}

// PutTrust inserts or replaces the trust of one provider and issuer.
func (c *Core) PutTrust(ctx context.Context, t store.Trust) error {
	return c.exec(ctx, "put trust", nil, `INSERT INTO trusts (provider, issuer, jwks_url, audience) VALUES ($1, $2, $3, $4)
		ON CONFLICT (provider, issuer) DO UPDATE SET jwks_url = excluded.jwks_url, audience = excluded.audience`,
		t.Provider, t.Issuer, t.JWKSURL, t.Audience)
}

// Trusts lists every trust by provider, then issuer.
func (c *Core) Trusts(ctx context.Context) ([]store.Trust, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT provider, issuer, jwks_url, audience FROM trusts ORDER BY provider, issuer`)
	out, err := Collect(rows, err, func(r Row) (store.Trust, error) {
		var t store.Trust
		return t, r.Scan(&t.Provider, &t.Issuer, &t.JWKSURL, &t.Audience)
	})
	return out, c.d.Wrap("trusts", err)
}

// PutTool inserts or replaces a tool; t.Removed is ignored, a put tool is live.
func (c *Core) PutTool(ctx context.Context, t store.Tool) error {
	return c.execThen(ctx, "put tool", nil, bumpTools, `INSERT INTO tools (name, description, price, read_only, approval, upstream_url, upstream_tool, overrides, removed)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, false)
		ON CONFLICT (name) DO UPDATE SET description = excluded.description, price = excluded.price,
			read_only = excluded.read_only, approval = excluded.approval, upstream_url = excluded.upstream_url,
			upstream_tool = excluded.upstream_tool, overrides = excluded.overrides, removed = false`,
		t.Name, t.Description, t.Price, t.ReadOnly, t.Approval, t.UpstreamURL, t.UpstreamTool, string(t.Overrides))
}

const toolCols = `name, description, price, read_only, approval, upstream_url, upstream_tool, overrides, removed`

func scanTool(r Row, more ...any) (store.Tool, error) {
	var t store.Tool
	var overrides string
	err := r.Scan(append([]any{&t.Name, &t.Description, &t.Price, &t.ReadOnly, &t.Approval, &t.UpstreamURL, &t.UpstreamTool, &overrides, &t.Removed}, more...)...)
	if overrides != "" {
		t.Overrides = json.RawMessage(overrides)
	}
	return t, err
}

// Tool reads a tool, removed or not.
func (c *Core) Tool(ctx context.Context, name string) (store.Tool, error) {
	t, err := scanTool(c.db.Read().QueryRow(ctx, `SELECT `+toolCols+` FROM tools WHERE name = $1`, name))
	return t, c.d.Wrap("tool", err)
}

// VersionedTool reads a tool as Tool does, with the tool registry's version
// in the same read.
func (c *Core) VersionedTool(ctx context.Context, name string) (store.Tool, int64, error) {
	var v int64
	t, err := scanTool(c.db.Read().QueryRow(ctx, `SELECT `+toolCols+`, `+toolsVersion+` FROM tools WHERE name = $1`, name), &v)
	return t, v, c.d.Wrap("tool", err)
}

// Tools lists the tools not removed, by name.
func (c *Core) Tools(ctx context.Context) ([]store.Tool, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT `+toolCols+` FROM tools WHERE NOT removed ORDER BY name`)
	out, err := Collect(rows, err, func(r Row) (store.Tool, error) { return scanTool(r) })
	return out, c.d.Wrap("tools", err)
}

// RemoveTool hides a tool from Tools; Tool still returns it.
func (c *Core) RemoveTool(ctx context.Context, name string) error {
	return c.execThen(ctx, "remove tool", store.ErrNotFound, bumpTools, `UPDATE tools SET removed = true WHERE name = $1`, name)
}

// PutServer inserts or replaces a server.
func (c *Core) PutServer(ctx context.Context, sv store.Server) error {
	prices, readOnly, err := store.EncodeServerRule(sv)
	if err != nil {
		return c.d.Wrap("put server", err)
	}
	return c.exec(ctx, "put server", nil, `INSERT INTO servers (name, url, prefix, price, prices, read_only) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (name) DO UPDATE SET url = excluded.url, prefix = excluded.prefix, price = excluded.price,
		prices = excluded.prices, read_only = excluded.read_only`,
		sv.Name, sv.URL, sv.Prefix, sv.Price, prices, readOnly)
}

// Servers lists the servers by name.
func (c *Core) Servers(ctx context.Context) ([]store.Server, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT name, url, prefix, price, prices, read_only FROM servers ORDER BY name`)
	out, err := Collect(rows, err, func(r Row) (store.Server, error) {
		var sv store.Server
		var prices, readOnly string
		if err := r.Scan(&sv.Name, &sv.URL, &sv.Prefix, &sv.Price, &prices, &readOnly); err != nil {
			return sv, err
		}
		return sv, store.DecodeServerRule(&sv, prices, readOnly)
	})
	return out, c.d.Wrap("servers", err)
}

// RemoveServer deletes a server.
func (c *Core) RemoveServer(ctx context.Context, name string) error {
	return c.exec(ctx, "remove server", store.ErrNotFound, `DELETE FROM servers WHERE name = $1`, name)
}

// CreatePermit inserts a permit.
func (c *Core) CreatePermit(ctx context.Context, p store.Permit) error {
	err := c.db.Write(ctx, func(q Querier) error { return InsertPermit(ctx, q, p) })
	return c.d.Wrap("create permit", err)
}

// PermitCols are the permits table's columns, in PermitValues' order.
const PermitCols = `id, wallet_id, api_key_id, tool, budget, spent, expires_at, auto, record_key, created_at`

// PermitValues are a permit's values in PermitCols order.
func PermitValues(p store.Permit) []any {
	return []any{p.ID, p.WalletID, p.APIKeyID, p.Tool, p.Budget, p.Spent, Nanos(p.ExpiresAt), p.Auto, p.RecordKey, Nanos(p.CreatedAt)}
}

var insertPermitSQL = `INSERT INTO permits (` + PermitCols + `) VALUES (` + Placeholders(1, columns(PermitCols)) + `)`

// InsertPermit writes a permit as it is.
func InsertPermit(ctx context.Context, q Querier, p store.Permit) error {
	_, err := q.Exec(ctx, insertPermitSQL, PermitValues(p)...)
	return err
}

// Permit reads a permit.
func (c *Core) Permit(ctx context.Context, id string) (store.Permit, error) {
	var p store.Permit
	var expires, created int64
	err := c.db.Read().QueryRow(ctx, `SELECT id, wallet_id, api_key_id, tool, budget, spent, expires_at, auto, record_key, created_at
		FROM permits WHERE id = $1`, id).
		Scan(&p.ID, &p.WalletID, &p.APIKeyID, &p.Tool, &p.Budget, &p.Spent, &expires, &p.Auto, &p.RecordKey, &created)
	p.ExpiresAt, p.CreatedAt = FromNanos(expires), FromNanos(created)
	return p, c.d.Wrap("permit", err)
}

// AddNote stores a note and returns its id.
func (c *Core) AddNote(ctx context.Context, walletID, text string, at time.Time) (int64, error) {
	var id int64
	err := c.db.Write(ctx, func(q Querier) error {
		return q.QueryRow(ctx, `INSERT INTO notes (wallet_id, text, at) VALUES ($1, $2, $3) RETURNING id`,
			walletID, text, Nanos(at)).Scan(&id)
	})
	return id, c.d.Wrap("add note", err)
}

// CountNotes counts the wallet's notes.
func (c *Core) CountNotes(ctx context.Context, walletID string) (int64, error) {
	var n int64
	err := c.db.Read().QueryRow(ctx, `SELECT count(*) FROM notes WHERE wallet_id = $1`, walletID).Scan(&n)
	return n, c.d.Wrap("count notes", err)
}

// LogDispatch records one call sent to a tool.
func (c *Core) LogDispatch(ctx context.Context, d store.Dispatch) error {
	err := c.db.Write(ctx, func(q Querier) error { return InsertDispatch(ctx, q, d) })
	return c.d.Wrap("log dispatch", err)
}

// InsertDispatch writes a dispatch log row, with a fresh id when d has none.
func InsertDispatch(ctx context.Context, q Querier, d store.Dispatch) error {
	_, err := q.Exec(ctx, `INSERT INTO dispatches (id, tool, record_key, fingerprint, wallet_id, at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		NewID(d.ID), d.Tool, d.RecordKey, d.Fingerprint, d.WalletID, Nanos(d.At))
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	return nil
}

// Dispatches lists the matching dispatch rows by time, then insertion.
func (c *Core) Dispatches(ctx context.Context, f store.DispatchFilter) ([]store.Dispatch, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT id, tool, record_key, fingerprint, wallet_id, at FROM dispatches
		WHERE ($1 = '' OR tool = $1) AND ($2 = '' OR wallet_id = $2) ORDER BY at, seq`, f.Tool, f.WalletID)
	out, err := Collect(rows, err, func(r Row) (store.Dispatch, error) {
		var d store.Dispatch
		var at int64
		err := r.Scan(&d.ID, &d.Tool, &d.RecordKey, &d.Fingerprint, &d.WalletID, &at)
		d.At = FromNanos(at)
		return d, err
	})
	return out, c.d.Wrap("dispatches", err)
}
