package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// AcquireLock inserts the lock row or takes over a stale one.
func (s *Store) AcquireLock(ctx context.Context, identity, owner string, now time.Time, staleAfter time.Duration) (store.Lock, error) {
	lk := store.Lock{Identity: identity, Owner: owner, Fence: 1, AcquiredAt: now}
	err := s.write(ctx, func(tx conn) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO locks (identity, owner, fence, acquired_at) VALUES (?, ?, 1, ?)
			ON CONFLICT (identity) DO NOTHING`, identity, owner, nanos(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		cur, err := lockOf(ctx, tx, identity)
		if err != nil {
			return err
		}
		if nanos(cur.AcquiredAt) > nanos(now)-int64(staleAfter) {
			return store.ErrLockHeld
		}
		// Conditional on the fence read: a takeover that slipped in between
		// wins, this one reports the lock held.
		lk.Fence = cur.Fence + 1
		return execOne(ctx, tx, store.ErrLockHeld,
			`UPDATE locks SET owner = ?, fence = ?, acquired_at = ? WHERE identity = ? AND fence = ?`,
			owner, lk.Fence, nanos(now), identity, cur.Fence)
	})
	if err != nil {
		return store.Lock{}, wrap("acquire lock", err)
	}
	return lk, nil
}

const lockCols = `identity, owner, fence, acquired_at`

func scanLock(r scanner) (store.Lock, error) {
	var l store.Lock
	var at int64
	err := r.Scan(&l.Identity, &l.Owner, &l.Fence, &at)
	l.AcquiredAt = fromNanos(at)
	return l, err
}

func lockOf(ctx context.Context, q conn, identity string) (store.Lock, error) {
	return scanLock(q.QueryRowContext(ctx, `SELECT `+lockCols+` FROM locks WHERE identity = ?`, identity))
}

// LockOf reads a lock row.
func (s *Store) LockOf(ctx context.Context, identity string) (store.Lock, error) {
	l, err := lockOf(ctx, s.read(), identity)
	return l, wrap("lock", err)
}

// Locks lists the lock rows whose identity starts with prefix.
func (s *Store) Locks(ctx context.Context, prefix string) ([]store.Lock, error) {
	// substr, not LIKE: identities may hold % and _.
	rows, err := s.read().QueryContext(ctx, `SELECT `+lockCols+` FROM locks
		WHERE substr(identity, 1, length(?1)) = ?1 ORDER BY identity`, prefix)
	out, err := collect(rows, err, scanLock)
	return out, wrap("locks", err)
}

// ReleaseLock deletes the lock row if owner holds it.
func (s *Store) ReleaseLock(ctx context.Context, identity, owner string) (bool, error) {
	var released bool
	err := s.write(ctx, func(tx conn) error {
		err := execOne(ctx, tx, errNoop, `DELETE FROM locks WHERE identity = ? AND owner = ?`, identity, owner)
		released = err == nil
		return err
	})
	return released, wrap("release lock", err)
}

// ReleaseLockAny deletes the lock row whoever holds it; no row is no error.
func (s *Store) ReleaseLockAny(ctx context.Context, identity string) error {
	err := s.write(ctx, func(tx conn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE identity = ?`, identity)
		return err
	})
	return wrap("release lock", err)
}

const recordCols = `key, kind, client_key, wallet_id, api_key_id, principal, tool, fingerprint, identity,
	bucket, attempt, state, owner, permit_id, receipt, result, charged, created_at, updated_at`

func scanRecord(r scanner) (store.Record, error) {
	var rec store.Record
	var result []byte
	var created, updated int64
	err := r.Scan(&rec.Key, &rec.Kind, &rec.ClientKey, &rec.WalletID, &rec.APIKeyID, &rec.Principal, &rec.Tool,
		&rec.Fingerprint, &rec.Identity, &rec.Bucket, &rec.Attempt, &rec.State, &rec.Owner, &rec.PermitID,
		&rec.Receipt, &result, &rec.Charged, &created, &updated)
	if result != nil {
		rec.Result = result
	}
	rec.CreatedAt, rec.UpdatedAt = fromNanos(created), fromNanos(updated)
	return rec, err
}

// resultText keeps a nil result NULL and every other one byte for byte.
func resultText(r []byte) any {
	if r == nil {
		return nil
	}
	return string(r)
}

func recordOf(ctx context.Context, q conn, key string) (store.Record, error) {
	return scanRecord(q.QueryRowContext(ctx, `SELECT `+recordCols+` FROM records WHERE key = ?`, key))
}

// Record reads a record.
func (s *Store) Record(ctx context.Context, key string) (store.Record, error) {
	r, err := recordOf(ctx, s.read(), key)
	return r, wrap("record", err)
}

// RecordsByIdentity lists derived records of identity created since, or in progress.
func (s *Store) RecordsByIdentity(ctx context.Context, identity string, since time.Time) ([]store.Record, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT `+recordCols+` FROM records
		WHERE kind = ? AND identity = ? AND (created_at >= ? OR state = ?) ORDER BY created_at, attempt`,
		store.KindDerived, identity, nanos(since), store.StateInProgress)
	out, err := collect(rows, err, scanRecord)
	return out, wrap("records by identity", err)
}

func insertRecord(ctx context.Context, tx conn, r store.Record) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO records (`+recordCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Key, r.Kind, r.ClientKey, r.WalletID, r.APIKeyID, r.Principal, r.Tool, r.Fingerprint, r.Identity,
		r.Bucket, r.Attempt, r.State, r.Owner, r.PermitID, r.Receipt, resultText(r.Result), r.Charged,
		nanos(r.CreatedAt), nanos(r.UpdatedAt))
	return err
}

// deleteAutoPermit removes the auto permit minted under rec.
func deleteAutoPermit(ctx context.Context, tx conn, rec store.Record) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM permits WHERE auto = 1 AND (record_key = ? OR id = ?)`, rec.Key, rec.PermitID)
	return err
}

// Reserve claims the fence, runs AfterClaim, then inserts the record. The
// immediate transaction holds the database's write lock from the claim to the
// commit, so no takeover can land in between: it waits, then gets ErrBusy.
func (s *Store) Reserve(ctx context.Context, r store.ReserveRequest) (store.Record, bool, error) {
	rec := r.Record
	if rec.Key == "" {
		return store.Record{}, false, errors.New("reserve record: empty key")
	}
	if rec.State == "" {
		rec.State = store.StateInProgress
	}
	permit := r.Permit
	if permit != nil && permit.Auto && permit.RecordKey == "" {
		p := *permit
		p.RecordKey = rec.Key // so Abandon and a replacement find it
		permit = &p
	}
	var charge store.ChargeRequest
	var debitEntry store.LedgerEntry
	if r.Charge != nil {
		charge = r.Charge.For(rec)
		rec = charge.Charged(rec)
		var err error
		if debitEntry, err = entry(charge.Entry, store.EntryDebit); err != nil {
			return store.Record{}, false, wrap("reserve record: charge", err)
		}
	}
	var out store.Record
	var created bool
	write := s.write
	if r.AfterClaim != nil {
		write = s.writeAlone
	}
	err := write(ctx, func(tx conn) error {
		if f := r.Fence; f != nil {
			if err := execOne(ctx, tx, store.ErrFenceLost,
				`UPDATE locks SET fence = fence WHERE identity = ? AND owner = ? AND fence = ?`,
				f.Identity, f.Owner, f.Fence); err != nil {
				return err
			}
		}
		if r.AfterClaim != nil {
			if err := r.AfterClaim(ctx); err != nil {
				return fmt.Errorf("after claim: %w", err)
			}
		}
		existing, err := recordOf(ctx, tx, rec.Key)
		switch {
		case err == nil && r.Replaces(existing):
			if err := deleteAutoPermit(ctx, tx, existing); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM records WHERE key = ?`, rec.Key); err != nil {
				return err
			}
		case err == nil:
			out = existing
			return errNoop
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := insertRecord(ctx, tx, rec); err != nil {
			return err
		}
		if permit != nil {
			if err := insertPermit(ctx, tx, *permit); err != nil {
				return fmt.Errorf("permit: %w", err)
			}
		}
		if r.Charge != nil {
			// The record went in charged: a refusal here fails the write,
			// which takes the record and its permit back out.
			if err := debit(ctx, tx, charge, debitEntry); err != nil {
				return fmt.Errorf("charge: %w", err)
			}
		}
		if f := r.Fence; f != nil && r.Release {
			// The claim above holds the row: this deletes it.
			if _, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE identity = ? AND owner = ?`, f.Identity, f.Owner); err != nil {
				return fmt.Errorf("release lock: %w", err)
			}
		}
		out, created = rec, true
		return nil
	})
	if err != nil {
		return store.Record{}, false, wrap("reserve record", err)
	}
	return out, created, nil
}

// Charge debits the wallet and spends the permit for a record its caller
// still owns, in one transaction.
func (s *Store) Charge(ctx context.Context, c store.ChargeRequest) error {
	e, err := entry(c.Debit(), store.EntryDebit)
	if err != nil {
		return wrap("charge", err)
	}
	err = s.write(ctx, func(tx conn) error {
		// The claim first, as a conditional update (one statement, not a
		// read and a write): a refusal below rolls it back with the rest.
		var wallet string
		err := tx.QueryRowContext(ctx, `UPDATE records SET charged = 1, updated_at = ?
			WHERE key = ? AND owner = ? AND state = ? AND NOT charged RETURNING wallet_id`,
			nanos(c.Now), c.RecordKey, c.Owner, store.StateInProgress).Scan(&wallet)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotOwner
		}
		if err != nil {
			return err
		}
		if e.WalletID == "" {
			e.WalletID = wallet
		}
		return debit(ctx, tx, c, e)
	})
	return wrap("charge", err)
}

// debit spends the permit and debits the wallet for a claimed record; an
// amount of 0 does neither. Conditional updates, each read back only when it
// finds nothing to update (to say why): the permit's life and budget, then
// the balance. A refusal is an error, so the transaction (or the batch's
// savepoint) undoes the claim and the permit's spend with it.
func debit(ctx context.Context, tx conn, c store.ChargeRequest, e store.LedgerEntry) error {
	if e.Amount == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE permits SET spent = spent + ?1
		WHERE id = ?2 AND expires_at > ?3 AND budget - spent >= ?1`, e.Amount, c.PermitID, nanos(c.Now))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, permitRefusal(ctx, tx, c.PermitID, c.Now))
	}
	res, err = tx.ExecContext(ctx, `UPDATE wallets SET balance = balance - ?1 WHERE id = ?2 AND balance >= ?1`, e.Amount, e.WalletID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, walletRefusal(ctx, tx, e.WalletID))
	}
	return insertEntry(ctx, tx, e)
}

// permitRefusal says why a permit could not be spent.
func permitRefusal(ctx context.Context, tx conn, id string, now time.Time) error {
	var expires int64
	if err := tx.QueryRowContext(ctx, `SELECT expires_at FROM permits WHERE id = ?`, id).Scan(&expires); err != nil {
		return fmt.Errorf("permit %q: %w", id, classify(err))
	}
	if nanos(now) >= expires {
		return store.ErrPermitExpired
	}
	return store.ErrPermitExhausted
}

// walletRefusal says why a wallet could not be debited.
func walletRefusal(ctx context.Context, tx conn, id string) error {
	var balance int64
	if err := tx.QueryRowContext(ctx, `SELECT balance FROM wallets WHERE id = ?`, id).Scan(&balance); err != nil {
		return fmt.Errorf("wallet %q: %w", id, classify(err))
	}
	return store.ErrInsufficientFunds
}

// Finish stores the outcome of a record its caller still owns, and the
// refund with it.
func (s *Store) Finish(ctx context.Context, key, owner string, o store.Outcome) error {
	if err := o.Check(); err != nil {
		return fmt.Errorf("finish record: %w", err)
	}
	err := s.write(ctx, func(tx conn) error {
		if o.Refund != nil {
			// The refund needs the record (its charge, its permit).
			rec, err := recordOf(ctx, tx, key)
			if errors.Is(err, sql.ErrNoRows) || err == nil && (rec.Owner != owner || rec.State != store.StateInProgress) {
				return store.ErrNotOwner
			}
			if err != nil {
				return err
			}
			if err := refund(ctx, tx, rec, *o.Refund, o.Now); err != nil {
				return err
			}
		}
		// Conditional on the owner and the state: no read of the record.
		if err := execOne(ctx, tx, store.ErrNotOwner, `UPDATE records SET state = ?, receipt = ?, result = ?, updated_at = ?
			WHERE key = ? AND owner = ? AND state = ?`,
			o.State, o.Receipt, resultText(o.Result), nanos(o.Now), key, owner, store.StateInProgress); err != nil {
			return err
		}
		if o.Dispatch != nil {
			return insertDispatch(ctx, tx, *o.Dispatch)
		}
		return nil
	})
	return wrap("finish record", err)
}

// refund gives a charged record's debit back to the wallet and the permit.
func refund(ctx context.Context, tx conn, rec store.Record, e store.LedgerEntry, now time.Time) error {
	if !rec.Charged {
		return errors.New("refund of an uncharged record")
	}
	if e.WalletID == "" {
		e.WalletID = rec.WalletID
	}
	if e.RecordKey == "" {
		e.RecordKey = rec.Key
	}
	if e.At.IsZero() {
		e.At = now
	}
	e, err := entry(e, store.EntryRefund)
	if err != nil {
		return err
	}
	if err := moveBalance(ctx, tx, e, e.Amount); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE permits SET spent = max(spent - ?, 0) WHERE id = ?`, e.Amount, rec.PermitID)
	return err
}

// Abandon deletes an uncharged in-progress record and its auto permit.
func (s *Store) Abandon(ctx context.Context, key, owner string) error {
	err := s.write(ctx, func(tx conn) error {
		rec, err := recordOf(ctx, tx, key)
		if errors.Is(err, sql.ErrNoRows) || err == nil && (rec.Owner != owner || rec.State != store.StateInProgress || rec.Charged) {
			return store.ErrNotOwner
		}
		if err != nil {
			return err
		}
		if err := deleteAutoPermit(ctx, tx, rec); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM records WHERE key = ?`, key)
		return err
	})
	return wrap("abandon record", err)
}
