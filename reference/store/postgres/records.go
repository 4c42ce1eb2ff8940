package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpconform/mcpconform/reference/store"
)

// raceRetries bounds the re-reads when a row changes between two statements
// of one READ COMMITTED transaction (a lock released and taken again between
// the insert and the read, say). Running out is contention: ErrBusy.
const raceRetries = 3

// AcquireLock inserts the lock row or takes over a stale one.
func (s *Store) AcquireLock(ctx context.Context, identity, owner string, now time.Time, staleAfter time.Duration) (store.Lock, error) {
	lk := store.Lock{Identity: identity, Owner: owner, Fence: 1, AcquiredAt: now}
	// No lock row: the insert alone, one statement. A row there goes on to
	// the transaction, which decides between held and a takeover.
	if ok, err := s.tryLock(ctx, identity, owner, nanos(now)); err != nil || ok {
		if err != nil {
			return store.Lock{}, wrap("acquire lock", err)
		}
		return lk, nil
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		for range raceRetries {
			// An uncommitted insert or claim of the same row makes this wait
			// (up to lock_timeout) for its outcome.
			tag, err := tx.Exec(ctx, `INSERT INTO locks (identity, owner, fence, acquired_at) VALUES ($1, $2, 1, $3)
				ON CONFLICT (identity) DO NOTHING`, identity, owner, nanos(now))
			if err != nil || tag.RowsAffected() == 1 {
				return err
			}
			cur, err := lockOf(ctx, tx, identity)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // released since the insert
			}
			if err != nil {
				return err
			}
			if nanos(cur.AcquiredAt) > nanos(now)-int64(staleAfter) {
				return store.ErrLockHeld
			}
			if s.afterLockRead != nil {
				s.afterLockRead(ctx)
			}
			// Conditional on the holding read, owner and fence; a claim
			// holding the row makes this wait, a takeover that committed
			// meanwhile makes it miss. The fence alone is not enough: after
			// a release a fresh holder starts again at fence 1, and its live
			// lock would be taken for the stale one.
			lk.Fence = cur.Fence + 1
			tag, err = tx.Exec(ctx, `UPDATE locks SET owner = $1, fence = $2, acquired_at = $3 WHERE identity = $4 AND fence = $5 AND owner = $6`,
				owner, lk.Fence, nanos(now), identity, cur.Fence, cur.Owner)
			if err != nil || tag.RowsAffected() == 1 {
				return err
			}
		}
		return store.ErrBusy
	})
	if err != nil {
		return store.Lock{}, wrap("acquire lock", err)
	}
	return lk, nil
}

type querier interface {
	QueryRow(ctx context.Context, query string, args ...any) pgx.Row
}

const lockCols = `identity, owner, fence, acquired_at`

func scanLock(r pgx.Row) (store.Lock, error) {
	var l store.Lock
	var at int64
	err := r.Scan(&l.Identity, &l.Owner, &l.Fence, &at)
	l.AcquiredAt = fromNanos(at)
	return l, err
}

func lockOf(ctx context.Context, q querier, identity string) (store.Lock, error) {
	return scanLock(q.QueryRow(ctx, `SELECT `+lockCols+` FROM locks WHERE identity = $1`, identity))
}

// LockOf reads a lock row.
func (s *Store) LockOf(ctx context.Context, identity string) (store.Lock, error) {
	l, err := lockOf(ctx, s.pool, identity)
	return l, wrap("lock", err)
}

// Locks lists the lock rows whose identity starts with prefix.
func (s *Store) Locks(ctx context.Context, prefix string) ([]store.Lock, error) {
	// starts_with, not LIKE: identities may hold % and _.
	rows, err := s.pool.Query(ctx, `SELECT `+lockCols+` FROM locks WHERE starts_with(identity, $1) ORDER BY identity`, prefix)
	out, err := collect(rows, err, scanLock)
	return out, wrap("locks", err)
}

// ReleaseLock deletes the lock row if owner holds it.
func (s *Store) ReleaseLock(ctx context.Context, identity, owner string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM locks WHERE identity = $1 AND owner = $2`, identity, owner)
	return err == nil && tag.RowsAffected() == 1, wrap("release lock", err)
}

// ReleaseLockAny deletes the lock row whoever holds it; no row is no error.
func (s *Store) ReleaseLockAny(ctx context.Context, identity string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM locks WHERE identity = $1`, identity)
		return err
	})
	return wrap("release lock", err)
}

const recordCols = `key, kind, client_key, wallet_id, api_key_id, principal, tool, fingerprint, identity,
	bucket, attempt, state, owner, permit_id, receipt, result, charged, created_at, updated_at`

func scanRecord(r pgx.Row) (store.Record, error) {
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

// resultBytes hands pgx a plain []byte: a json.RawMessage would be encoded
// as JSON, not stored byte for byte. nil stays NULL.
func resultBytes(r []byte) []byte { return r }

func recordOf(ctx context.Context, q querier, key string) (store.Record, error) {
	return scanRecord(q.QueryRow(ctx, `SELECT `+recordCols+` FROM records WHERE key = $1`, key))
}

// lockedRecord reads a record and holds its row to the end of tx.
func lockedRecord(ctx context.Context, tx pgx.Tx, key string) (store.Record, error) {
	return scanRecord(tx.QueryRow(ctx, `SELECT `+recordCols+` FROM records WHERE key = $1 FOR NO KEY UPDATE`, key))
}

// Record reads a record.
func (s *Store) Record(ctx context.Context, key string) (store.Record, error) {
	r, err := recordOf(ctx, s.pool, key)
	return r, wrap("record", err)
}

// RecordsByIdentity lists derived records of identity created since, or in progress.
func (s *Store) RecordsByIdentity(ctx context.Context, identity string, since time.Time) ([]store.Record, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+recordCols+` FROM records
		WHERE kind = $1 AND identity = $2 AND (created_at >= $3 OR state = $4) ORDER BY created_at, attempt`,
		store.KindDerived, identity, nanos(since), store.StateInProgress)
	out, err := collect(rows, err, scanRecord)
	return out, wrap("records by identity", err)
}

// insertRecord inserts r unless its key exists; false when it does (an
// uncommitted insert of the key makes it wait for that one's outcome).
func insertRecord(ctx context.Context, tx pgx.Tx, r store.Record) (bool, error) {
	v := recordValues(r)
	tag, err := tx.Exec(ctx, `INSERT INTO records (`+recordCols+`) VALUES (`+placeholders(1, len(v))+`)
		ON CONFLICT (key) DO NOTHING`, v...)
	return tag.RowsAffected() == 1, err
}

// deleteAutoPermit removes the auto permit minted under rec.
func deleteAutoPermit(ctx context.Context, tx pgx.Tx, rec store.Record) error {
	_, err := tx.Exec(ctx, `DELETE FROM permits WHERE auto AND (record_key = $1 OR id = $2)`, rec.Key, rec.PermitID)
	return err
}

// Reserve claims the fence, runs AfterClaim, then inserts the record. The
// claim is an UPDATE of the lock row, so the row stays locked until commit:
// a takeover in between waits for it and, past lock_timeout, gets ErrBusy.
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
	var charge *store.ChargeRequest
	if r.Charge != nil {
		c := r.Charge.For(rec)
		var err error
		if c.Entry, err = entry(c.Entry, store.EntryDebit); err != nil {
			return store.Record{}, false, wrap("reserve record: charge", err)
		}
		rec, charge = c.Charged(rec), &c
	}
	if r.AfterClaim == nil {
		// The usual case, a key seen for the first time, in one statement
		// (fenced and charged too); a key that has a record, a lost fence
		// or a refused charge goes on to the transaction, which decides.
		created, err := s.reserveNew(ctx, rec, permit, r.Fence, r.Release, charge)
		if err != nil {
			return store.Record{}, false, wrap("reserve record", err)
		}
		if created {
			return rec, true, nil
		}
	}
	var out store.Record
	var created bool
	err := s.write(ctx, func(tx pgx.Tx) error {
		if f := r.Fence; f != nil {
			if err := execOne(ctx, tx, store.ErrFenceLost,
				`UPDATE locks SET fence = fence WHERE identity = $1 AND owner = $2 AND fence = $3`,
				f.Identity, f.Owner, f.Fence); err != nil {
				return err
			}
		}
		if r.AfterClaim != nil {
			if err := r.AfterClaim(ctx); err != nil {
				return fmt.Errorf("after claim: %w", err)
			}
		}
		for range raceRetries {
			inserted, err := insertRecord(ctx, tx, rec)
			if err != nil {
				return err
			}
			if !inserted {
				existing, err := lockedRecord(ctx, tx, rec.Key)
				if errors.Is(err, pgx.ErrNoRows) {
					continue // abandoned since the insert
				}
				if err != nil {
					return err
				}
				if !r.Replaces(existing) {
					out = existing
					return errNoop
				}
				if err := deleteAutoPermit(ctx, tx, existing); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `DELETE FROM records WHERE key = $1`, rec.Key); err != nil {
					return err
				}
				if _, err := insertRecord(ctx, tx, rec); err != nil {
					return err
				}
			}
			if permit != nil {
				if err := insertPermit(ctx, tx, *permit); err != nil {
					return fmt.Errorf("permit: %w", err)
				}
			}
			if charge != nil {
				// The record went in charged: a refusal here rolls it back
				// with its permit and whatever it replaced.
				if err := debitTx(ctx, tx, *charge, charge.Entry); err != nil {
					return fmt.Errorf("charge: %w", err)
				}
			}
			if f := r.Fence; f != nil && r.Release {
				// The claim above holds the row: this deletes it.
				if _, err := tx.Exec(ctx, `DELETE FROM locks WHERE identity = $1 AND owner = $2`, f.Identity, f.Owner); err != nil {
					return fmt.Errorf("release lock: %w", err)
				}
			}
			out, created = rec, true
			return nil
		}
		return store.ErrBusy
	})
	if err != nil {
		return store.Record{}, false, wrap("reserve record", err)
	}
	return out, created, nil
}

// Charge debits the wallet and spends the permit for a record its caller
// still owns: in one statement (charge) when every check holds.
func (s *Store) Charge(ctx context.Context, c store.ChargeRequest) error {
	e, err := entry(c.Debit(), store.EntryDebit)
	if err != nil {
		return wrap("charge", err)
	}
	if ok, err := s.charge(ctx, c, e); ok || err != nil {
		return wrap("charge", err)
	}
	return wrap("charge", s.chargeTx(ctx, c, e))
}

// chargeTx is Charge as a transaction, step by step, for a charge the one
// statement could not make: it finds which check fails.
func (s *Store) chargeTx(ctx context.Context, c store.ChargeRequest, e store.LedgerEntry) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		rec, err := lockedRecord(ctx, tx, c.RecordKey)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && (rec.Owner != c.Owner || rec.State != store.StateInProgress || rec.Charged) {
			return store.ErrNotOwner
		}
		if err != nil {
			return err
		}
		if e.WalletID == "" {
			e.WalletID = rec.WalletID
		}
		if err := debitTx(ctx, tx, c, e); err != nil {
			return err
		}
		return markCharged(ctx, tx, c)
	})
}

// debitTx spends the permit and debits the wallet for a claimed record, in
// tx; an amount of 0 does neither. The permit is locked and checked first,
// then the debit entry written, then the wallet's balance updated on
// condition (the one row every call of the wallet shares, last, so it is
// held from its update to the commit only). The entry's foreign key has
// already found the wallet, so an update that finds nothing is too little
// balance.
func debitTx(ctx context.Context, tx pgx.Tx, c store.ChargeRequest, e store.LedgerEntry) error {
	if e.Amount == 0 {
		return nil
	}
	var budget, spent, expires int64
	err := tx.QueryRow(ctx, `SELECT budget, spent, expires_at FROM permits WHERE id = $1 FOR NO KEY UPDATE`, c.PermitID).
		Scan(&budget, &spent, &expires)
	if err != nil {
		return fmt.Errorf("permit %q: %w", c.PermitID, classify(err))
	}
	if nanos(c.Now) >= expires {
		return store.ErrPermitExpired
	}
	if budget-spent < e.Amount {
		return store.ErrPermitExhausted
	}
	if _, err := tx.Exec(ctx, `UPDATE permits SET spent = spent + $1 WHERE id = $2`, e.Amount, c.PermitID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ledger_entries (id, wallet_id, kind, amount, record_key, receipt, tool, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.ID, e.WalletID, e.Kind, e.Amount, e.RecordKey, e.Receipt, e.Tool, nanos(e.At)); err != nil {
		return fmt.Errorf("wallet %q: %w", e.WalletID, classify(err))
	}
	return execOne(ctx, tx, store.ErrInsufficientFunds,
		`UPDATE wallets SET balance = balance - $1 WHERE id = $2 AND balance >= $1`, e.Amount, e.WalletID)
}

func markCharged(ctx context.Context, tx pgx.Tx, c store.ChargeRequest) error {
	_, err := tx.Exec(ctx, `UPDATE records SET charged = true, updated_at = $1 WHERE key = $2`, nanos(c.Now), c.RecordKey)
	return err
}

// Finish stores the outcome of a record its caller still owns, and the
// refund or the dispatch row with it (Outcome.Check: never both).
func (s *Store) Finish(ctx context.Context, key, owner string, o store.Outcome) error {
	if err := o.Check(); err != nil {
		return fmt.Errorf("finish record: %w", err)
	}
	if o.Refund == nil {
		// No balance moves: one statement.
		ok, err := s.finish(ctx, key, owner, o)
		if err == nil && !ok {
			err = store.ErrNotOwner
		}
		return wrap("finish record", err)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		rec, err := lockedRecord(ctx, tx, key)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && (rec.Owner != owner || rec.State != store.StateInProgress) {
			return store.ErrNotOwner
		}
		if err != nil {
			return err
		}
		if err := refund(ctx, tx, rec, *o.Refund, o.Now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE records SET state = $1, receipt = $2, result = $3, updated_at = $4 WHERE key = $5`,
			o.State, o.Receipt, resultBytes(o.Result), nanos(o.Now), key)
		return err
	})
	return wrap("finish record", err)
}

// refund gives a charged record's debit back to the permit and the wallet.
func refund(ctx context.Context, tx pgx.Tx, rec store.Record, e store.LedgerEntry, now time.Time) error {
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
	if _, err := tx.Exec(ctx, `UPDATE permits SET spent = greatest(spent - $1, 0) WHERE id = $2`, e.Amount, rec.PermitID); err != nil {
		return err
	}
	return moveBalance(ctx, tx, e, e.Amount)
}

// Abandon deletes an uncharged in-progress record and its auto permit.
func (s *Store) Abandon(ctx context.Context, key, owner string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		rec, err := lockedRecord(ctx, tx, key)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && (rec.Owner != owner || rec.State != store.StateInProgress || rec.Charged) {
			return store.ErrNotOwner
		}
		if err != nil {
			return err
		}
		if err := deleteAutoPermit(ctx, tx, rec); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM records WHERE key = $1`, key)
		return err
	})
	return wrap("abandon record", err)
}
