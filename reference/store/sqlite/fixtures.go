package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// CreateWallet inserts a wallet; ErrExists if its id is taken.
func (s *Store) CreateWallet(ctx context.Context, w store.Wallet) error {
	err := s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO wallets (id, balance, created_at) VALUES (?, ?, ?)`,
			w.ID, w.Balance, nanos(w.CreatedAt))
		return err
	})
	return wrap("create wallet", err)
}

// Wallet reads a wallet.
func (s *Store) Wallet(ctx context.Context, id string) (store.Wallet, error) {
	var w store.Wallet
	var created int64
	err := s.read().QueryRowContext(ctx, `SELECT id, balance, created_at FROM wallets WHERE id = ?`, id).
		Scan(&w.ID, &w.Balance, &created)
	w.CreatedAt = fromNanos(created)
	return w, wrap("wallet", err)
}

// Credit adds e.Amount to the wallet and records the credit entry.
func (s *Store) Credit(ctx context.Context, e store.LedgerEntry) error {
	e, err := entry(e, store.EntryCredit)
	if err != nil {
		return wrap("credit", err)
	}
	err = s.write(ctx, func(tx conn) error {
		return moveBalance(ctx, tx, e, e.Amount)
	})
	return wrap("credit", err)
}

// AppendDebit takes e.Amount off the wallet with no condition at all.
func (s *Store) AppendDebit(ctx context.Context, e store.LedgerEntry) error {
	kind := store.EntryDebit
	if e.Kind == store.EntryFee {
		kind = store.EntryFee // takes money off like a debit (the refusal-fee bug)
	}
	e, err := entry(e, kind)
	if err != nil {
		return wrap("append debit", err)
	}
	err = s.write(ctx, func(tx conn) error {
		return moveBalance(ctx, tx, e, -e.Amount)
	})
	return wrap("append debit", err)
}

// entry checks e is of kind and fills the defaults a caller may leave out.
func entry(e store.LedgerEntry, kind string) (store.LedgerEntry, error) {
	if e.Kind == "" {
		e.Kind = kind
	}
	if e.Kind != kind {
		return e, fmt.Errorf("entry kind %q, want %q", e.Kind, kind)
	}
	if e.Amount < 0 {
		return e, fmt.Errorf("negative amount %d", e.Amount)
	}
	e.ID = newID(e.ID)
	return e, nil
}

// moveBalance changes the wallet's balance by delta and writes e.
func moveBalance(ctx context.Context, tx conn, e store.LedgerEntry, delta int64) error {
	if err := execOne(ctx, tx, fmt.Errorf("wallet %q: %w", e.WalletID, store.ErrNotFound),
		`UPDATE wallets SET balance = balance + ? WHERE id = ?`, delta, e.WalletID); err != nil {
		return err
	}
	return insertEntry(ctx, tx, e)
}

func insertEntry(ctx context.Context, tx conn, e store.LedgerEntry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO ledger_entries (id, wallet_id, kind, amount, record_key, receipt, tool, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.WalletID, e.Kind, e.Amount, e.RecordKey, e.Receipt, e.Tool, nanos(e.At))
	return err
}

// Ledger lists the wallet's entries by time, then insertion.
func (s *Store) Ledger(ctx context.Context, walletID string) ([]store.LedgerEntry, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT id, wallet_id, kind, amount, record_key, receipt, tool, at
		FROM ledger_entries WHERE wallet_id = ? ORDER BY at, seq`, walletID)
	out, err := collect(rows, err, func(r scanner) (store.LedgerEntry, error) {
		var e store.LedgerEntry
		var at int64
		err := r.Scan(&e.ID, &e.WalletID, &e.Kind, &e.Amount, &e.RecordKey, &e.Receipt, &e.Tool, &at)
		e.At = fromNanos(at)
		return e, err
	})
	if err == nil && len(out) == 0 {
		_, err = s.Wallet(ctx, walletID)
	}
	return out, wrap("ledger", err)
}

// CreateAPIKey inserts a key; ErrNotFound if its wallet is missing.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	err := s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, wallet_id, secret_hash, created_at) VALUES (?, ?, ?, ?)`,
			k.ID, k.WalletID, k.SecretHash, nanos(k.CreatedAt))
		return err
	})
	return wrap("create api key", err)
}

// APIKey reads a key.
func (s *Store) APIKey(ctx context.Context, id string) (store.APIKey, error) {
	var k store.APIKey
	var created int64
	err := s.read().QueryRowContext(ctx, `SELECT id, wallet_id, secret_hash, created_at FROM api_keys WHERE id = ?`, id).
		Scan(&k.ID, &k.WalletID, &k.SecretHash, &created)
	k.CreatedAt = fromNanos(created)
	return k, wrap("api key", err)
}

// PutPrincipal inserts or replaces a principal by id; ErrExists when another
// principal already has its provider, issuer and subject.
func (s *Store) PutPrincipal(ctx context.Context, p store.Principal) error {
	tools, err := json.Marshal(nonNil(p.Tools))
	if err != nil {
		return wrap("put principal", err)
	}
	err = s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO principals (id, provider, issuer, subject, tools, revoked)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET provider = excluded.provider, issuer = excluded.issuer,
				subject = excluded.subject, tools = excluded.tools, revoked = excluded.revoked`,
			p.ID, p.Provider, p.Issuer, p.Subject, string(tools), p.Revoked)
		return err
	})
	return wrap("put principal", err)
}

const principalCols = `id, provider, issuer, subject, tools, revoked`

func scanPrincipal(r scanner) (store.Principal, error) {
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
func (s *Store) Principal(ctx context.Context, provider, issuer, subject string) (store.Principal, error) {
	p, err := scanPrincipal(s.read().QueryRowContext(ctx, `SELECT `+principalCols+` FROM principals
		WHERE provider = ? AND issuer = ? AND subject = ?`, provider, issuer, subject))
	return p, wrap("principal", err)
}

// PrincipalByID reads a principal.
func (s *Store) PrincipalByID(ctx context.Context, id string) (store.Principal, error) {
	p, err := scanPrincipal(s.read().QueryRowContext(ctx, `SELECT `+principalCols+` FROM principals WHERE id = ?`, id))
	return p, wrap("principal", err)
}

// RevokePrincipal marks a principal revoked.
func (s *Store) RevokePrincipal(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx conn) error {
		return execOne(ctx, tx, store.ErrNotFound, `UPDATE principals SET revoked = 1 WHERE id = ?`, id)
	})
	return wrap("revoke principal", err)
}

// PutTrust inserts or replaces the trust of one provider and issuer.
func (s *Store) PutTrust(ctx context.Context, t store.Trust) error {
	err := s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO trusts (provider, issuer, jwks_url, audience) VALUES (?, ?, ?, ?)
			ON CONFLICT (provider, issuer) DO UPDATE SET jwks_url = excluded.jwks_url, audience = excluded.audience`,
			t.Provider, t.Issuer, t.JWKSURL, t.Audience)
		return err
	})
	return wrap("put trust", err)
}

// Trusts lists every trust by provider, then issuer.
func (s *Store) Trusts(ctx context.Context) ([]store.Trust, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT provider, issuer, jwks_url, audience FROM trusts ORDER BY provider, issuer`)
	out, err := collect(rows, err, func(r scanner) (store.Trust, error) {
		var t store.Trust
		return t, r.Scan(&t.Provider, &t.Issuer, &t.JWKSURL, &t.Audience)
	})
	return out, wrap("trusts", err)
}

// PutTool inserts or replaces a tool; t.Removed is ignored, a put tool is live.
func (s *Store) PutTool(ctx context.Context, t store.Tool) error {
	err := s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tools (name, description, price, read_only, approval, upstream_url, upstream_tool, overrides, removed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
			ON CONFLICT (name) DO UPDATE SET description = excluded.description, price = excluded.price,
				read_only = excluded.read_only, approval = excluded.approval, upstream_url = excluded.upstream_url,
				upstream_tool = excluded.upstream_tool, overrides = excluded.overrides, removed = 0`,
			t.Name, t.Description, t.Price, t.ReadOnly, t.Approval, t.UpstreamURL, t.UpstreamTool, string(t.Overrides))
		return err
	})
	return wrap("put tool", err)
}

const toolCols = `name, description, price, read_only, approval, upstream_url, upstream_tool, overrides, removed`

func scanTool(r scanner) (store.Tool, error) {
	var t store.Tool
	var overrides string
	err := r.Scan(&t.Name, &t.Description, &t.Price, &t.ReadOnly, &t.Approval, &t.UpstreamURL, &t.UpstreamTool, &overrides, &t.Removed)
	if overrides != "" {
		t.Overrides = json.RawMessage(overrides)
	}
	return t, err
}

// Tool reads a tool, removed or not.
func (s *Store) Tool(ctx context.Context, name string) (store.Tool, error) {
	t, err := scanTool(s.read().QueryRowContext(ctx, `SELECT `+toolCols+` FROM tools WHERE name = ?`, name))
	return t, wrap("tool", err)
}

// Tools lists the tools not removed, by name.
func (s *Store) Tools(ctx context.Context) ([]store.Tool, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT `+toolCols+` FROM tools WHERE removed = 0 ORDER BY name`)
	out, err := collect(rows, err, scanTool)
	return out, wrap("tools", err)
}

// RemoveTool hides a tool from Tools; Tool still returns it.
func (s *Store) RemoveTool(ctx context.Context, name string) error {
	err := s.write(ctx, func(tx conn) error {
		return execOne(ctx, tx, store.ErrNotFound, `UPDATE tools SET removed = 1 WHERE name = ?`, name)
	})
	return wrap("remove tool", err)
}

// PutServer inserts or replaces a server.
func (s *Store) PutServer(ctx context.Context, sv store.Server) error {
	prices, readOnly, err := store.EncodeServerRule(sv)
	if err != nil {
		return wrap("put server", err)
	}
	err = s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO servers (name, url, prefix, price, prices, read_only) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET url = excluded.url, prefix = excluded.prefix, price = excluded.price,
				prices = excluded.prices, read_only = excluded.read_only`,
			sv.Name, sv.URL, sv.Prefix, sv.Price, prices, readOnly)
		return err
	})
	return wrap("put server", err)
}

// Servers lists the servers by name.
func (s *Store) Servers(ctx context.Context) ([]store.Server, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT name, url, prefix, price, prices, read_only FROM servers ORDER BY name`)
	out, err := collect(rows, err, func(r scanner) (store.Server, error) {
		var sv store.Server
		var prices, readOnly string
		if err := r.Scan(&sv.Name, &sv.URL, &sv.Prefix, &sv.Price, &prices, &readOnly); err != nil {
			return sv, err
		}
		return sv, store.DecodeServerRule(&sv, prices, readOnly)
	})
	return out, wrap("servers", err)
}

// RemoveServer deletes a server.
func (s *Store) RemoveServer(ctx context.Context, name string) error {
	err := s.write(ctx, func(tx conn) error {
		return execOne(ctx, tx, store.ErrNotFound, `DELETE FROM servers WHERE name = ?`, name)
	})
	return wrap("remove server", err)
}

// CreatePermit inserts a permit.
func (s *Store) CreatePermit(ctx context.Context, p store.Permit) error {
	err := s.write(ctx, func(tx conn) error { return insertPermit(ctx, tx, p) })
	return wrap("create permit", err)
}

func insertPermit(ctx context.Context, tx conn, p store.Permit) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO permits (id, wallet_id, api_key_id, tool, budget, spent, expires_at, auto, record_key, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.WalletID, p.APIKeyID, p.Tool, p.Budget, p.Spent, nanos(p.ExpiresAt), p.Auto, p.RecordKey, nanos(p.CreatedAt))
	return err
}

// Permit reads a permit.
func (s *Store) Permit(ctx context.Context, id string) (store.Permit, error) {
	var p store.Permit
	var expires, created int64
	err := s.read().QueryRowContext(ctx, `SELECT id, wallet_id, api_key_id, tool, budget, spent, expires_at, auto, record_key, created_at
		FROM permits WHERE id = ?`, id).
		Scan(&p.ID, &p.WalletID, &p.APIKeyID, &p.Tool, &p.Budget, &p.Spent, &expires, &p.Auto, &p.RecordKey, &created)
	p.ExpiresAt, p.CreatedAt = fromNanos(expires), fromNanos(created)
	return p, wrap("permit", err)
}

// AddNote stores a note and returns its id.
func (s *Store) AddNote(ctx context.Context, walletID, text string, at time.Time) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx conn) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO notes (wallet_id, text, at) VALUES (?, ?, ?)`, walletID, text, nanos(at))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, wrap("add note", err)
}

// CountNotes counts the wallet's notes.
func (s *Store) CountNotes(ctx context.Context, walletID string) (int64, error) {
	var n int64
	err := s.read().QueryRowContext(ctx, `SELECT count(*) FROM notes WHERE wallet_id = ?`, walletID).Scan(&n)
	return n, wrap("count notes", err)
}

// LogDispatch records one call sent to a tool.
func (s *Store) LogDispatch(ctx context.Context, d store.Dispatch) error {
	err := s.write(ctx, func(tx conn) error { return insertDispatch(ctx, tx, d) })
	return wrap("log dispatch", err)
}

func insertDispatch(ctx context.Context, tx conn, d store.Dispatch) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO dispatches (id, tool, record_key, fingerprint, wallet_id, at)
		VALUES (?, ?, ?, ?, ?, ?)`,
		newID(d.ID), d.Tool, d.RecordKey, d.Fingerprint, d.WalletID, nanos(d.At))
	if err != nil {
		return fmt.Errorf("dispatch: %w", err)
	}
	return nil
}

// Dispatches lists the matching dispatch rows by time, then insertion.
func (s *Store) Dispatches(ctx context.Context, f store.DispatchFilter) ([]store.Dispatch, error) {
	var where []string
	var args []any
	if f.Tool != "" {
		where, args = append(where, "tool = ?"), append(args, f.Tool)
	}
	if f.WalletID != "" {
		where, args = append(where, "wallet_id = ?"), append(args, f.WalletID)
	}
	q := `SELECT id, tool, record_key, fingerprint, wallet_id, at FROM dispatches`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.read().QueryContext(ctx, q+` ORDER BY at, seq`, args...)
	out, err := collect(rows, err, func(r scanner) (store.Dispatch, error) {
		var d store.Dispatch
		var at int64
		err := r.Scan(&d.ID, &d.Tool, &d.RecordKey, &d.Fingerprint, &d.WalletID, &at)
		d.At = fromNanos(at)
		return d, err
	})
	return out, wrap("dispatches", err)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
