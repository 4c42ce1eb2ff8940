package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// The records, locks and charges: the rules of a first call written once.
// Where one database locks rows one by one (PostgreSQL at READ COMMITTED),
// every read-modify-write locks what it reads (Dialect.ForUpdate, or a
// conditional UPDATE checked by row count) in one order: locks, records,
// permits, wallets, the wallet (the row every call of a wallet shares) last
// so it is held the shortest. Under SQLite's database write lock the same
// statements simply run one after another.

// ErrNoop, returned by a Write's fn, ends it with a rollback: the call
// found nothing to do and must leave no trace. Write then returns nil.
var ErrNoop = errors.New("noop")

// StatementWriter is a DB on which one statement may write outside Write,
// as a transaction of its own in one round trip (PostgreSQL's pool). The
// core then sends its single-statement writes so; without it, each is a
// Write.
type StatementWriter interface {
	WriteStatement() Querier
}

// AloneWriter is a DB that batches writes (SQLite's group commit) and can
// run one by itself: the core gives it a write that may stall inside its
// transaction (ReserveRequest.AfterClaim), so no other write waits on it.
type AloneWriter interface {
	WriteAlone(ctx context.Context, fn func(q Querier) error) error
}

// FirstCall is a DB's one-statement forms of a first call's writes, which
// the core tries before its transaction forms. Each reports false, having
// written nothing, when it cannot decide (a key that has a record, a lost
// fence, a refused charge, a record not the owner's); the transaction form
// then decides and says why.
type FirstCall interface {
	// ReserveNew creates a record whose key is new: the fence claim, the
	// record, its permit, the charge (nil, or checked: ChargeRequest.For and
	// Entry) and with release the lock row's deletion. rec is already marked
	// charged.
	ReserveNew(ctx context.Context, rec store.Record, permit *store.Permit, fence *store.Fence, release bool,
		charge *store.ChargeRequest) (bool, error)
	// ReserveSlot is store.Store's ReserveSlot in two round trips: the lock
	// row's insert with the slots' read (SlotsQuery, ScanRecords), then
	// the reservation Choose asks for, which ready prepares, as ReserveNew's
	// statement with the commit. It answers only a call it can decide
	// (decided): not one that finds a lock row there, a chosen key that has
	// a record, or a refused charge.
	ReserveSlot(ctx context.Context, r store.SlotRequest, ready func(store.ReserveRequest) (Reservation, error)) (
		rec store.Record, created, decided bool, err error)
	// Charge is store.Store's Charge with e its checked entry; a charge of 0
	// on a record not the owner's may answer store.ErrNotOwner.
	Charge(ctx context.Context, c store.ChargeRequest, e store.LedgerEntry) (bool, error)
	// Finish stores an outcome without a refund (Outcome.Check holds).
	Finish(ctx context.Context, key, owner string, o store.Outcome) (bool, error)
}

// raceRetries bounds the re-reads when a row changes between two statements
// of one transaction that does not hold the whole database (a lock released
// and taken again between the insert and the read, say). Running out is
// contention: store.ErrBusy.
const raceRetries = 3

// writeStatement runs one statement as a write of its own and says how many
// rows it touched.
func (c *Core) writeStatement(ctx context.Context, query string, args ...any) (int64, error) {
	if c.stmt != nil {
		return c.stmt.WriteStatement().Exec(ctx, query, args...)
	}
	var n int64
	err := c.db.Write(ctx, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

// SetAfterLockRead installs, for tests only, a hook AcquireLock runs between
// reading a stale lock and taking it over, where another holder can slip in.
func (c *Core) SetAfterLockRead(fn func(ctx context.Context)) { c.afterLockRead = fn }

// InsertLock inserts a lock row ($1 identity, $2 owner, $3 acquired at)
// at fence 1 unless the identity has one.
const InsertLock = `INSERT INTO locks (identity, owner, fence, acquired_at) VALUES ($1, $2, 1, $3)
	ON CONFLICT (identity) DO NOTHING`

// DeleteLock deletes the lock row ($1 identity) if $2 owns it.
const DeleteLock = `DELETE FROM locks WHERE identity = $1 AND owner = $2`

// AcquireLock inserts the lock row or takes over a stale one.
func (c *Core) AcquireLock(ctx context.Context, identity, owner string, now time.Time, staleAfter time.Duration) (store.Lock, error) {
	lk := store.Lock{Identity: identity, Owner: owner, Fence: 1, AcquiredAt: now}
	if c.stmt != nil {
		// No lock row: the insert alone, one statement. A row there goes on
		// to the transaction, which decides between held and a takeover.
		n, err := c.stmt.WriteStatement().Exec(ctx, InsertLock, identity, owner, Nanos(now))
		if err != nil || n == 1 {
			if err != nil {
				return store.Lock{}, c.d.Wrap("acquire lock", err)
			}
			return lk, nil
		}
	}
	err := c.db.Write(ctx, func(q Querier) error {
		var err error
		lk, _, err = c.acquire(ctx, q, identity, owner, now, staleAfter)
		return err
	})
	if err != nil {
		return store.Lock{}, c.d.Wrap("acquire lock", err)
	}
	return lk, nil
}

// acquire inserts the lock row or takes over a stale one, in q's
// transaction; took says it was taken over.
func (c *Core) acquire(ctx context.Context, q Querier, identity, owner string, now time.Time,
	staleAfter time.Duration) (lk store.Lock, took bool, err error) {
	lk = store.Lock{Identity: identity, Owner: owner, Fence: 1, AcquiredAt: now}
	for range raceRetries {
		// An uncommitted insert or claim of the same row makes this wait
		// (up to the store's lock timeout) for its outcome.
		n, err := q.Exec(ctx, InsertLock, identity, owner, Nanos(now))
		if err != nil || n == 1 {
			return lk, false, err
		}
		cur, err := lockOf(ctx, q, identity)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released since the insert
		}
		if err != nil {
			return lk, false, err
		}
		if Nanos(cur.AcquiredAt) > Nanos(now)-int64(staleAfter) {
			return lk, false, store.ErrLockHeld
		}
		if c.afterLockRead != nil {
			c.afterLockRead(ctx)
		}
		// Conditional on the holding read, owner and fence; a claim
		// holding the row makes this wait, a takeover that committed
		// meanwhile makes it miss. The fence alone is not enough: after
		// a release a fresh holder starts again at fence 1, and its live
		// lock would be taken for the stale one.
		lk.Fence = cur.Fence + 1
		n, err = q.Exec(ctx, `UPDATE locks SET owner = $1, fence = $2, acquired_at = $3 WHERE identity = $4 AND fence = $5 AND owner = $6`,
			owner, lk.Fence, Nanos(now), identity, cur.Fence, cur.Owner)
		if err != nil || n == 1 {
			return lk, err == nil, err
		}
	}
	return lk, false, store.ErrBusy
}

const lockCols = `identity, owner, fence, acquired_at`

func scanLock(r Row) (store.Lock, error) {
	var l store.Lock
	var at int64
	err := r.Scan(&l.Identity, &l.Owner, &l.Fence, &at)
	l.AcquiredAt = FromNanos(at)
	return l, err
}

func lockOf(ctx context.Context, q Querier, identity string) (store.Lock, error) {
	return scanLock(q.QueryRow(ctx, `SELECT `+lockCols+` FROM locks WHERE identity = $1`, identity))
}

// LockOf reads a lock row.
func (c *Core) LockOf(ctx context.Context, identity string) (store.Lock, error) {
	l, err := lockOf(ctx, c.db.Read(), identity)
	return l, c.d.Wrap("lock", err)
}

// Locks lists the lock rows whose identity starts with prefix.
func (c *Core) Locks(ctx context.Context, prefix string) ([]store.Lock, error) {
	rows, err := c.db.Read().Query(ctx, `SELECT `+lockCols+` FROM locks WHERE `+c.d.HasPrefix("identity", "$1")+
		` ORDER BY identity`, prefix)
	out, err := Collect(rows, err, scanLock)
	return out, c.d.Wrap("locks", err)
}

// ReleaseLock deletes the lock row if owner holds it.
func (c *Core) ReleaseLock(ctx context.Context, identity, owner string) (bool, error) {
	n, err := c.writeStatement(ctx, DeleteLock, identity, owner)
	return err == nil && n == 1, c.d.Wrap("release lock", err)
}

// ReleaseLockAny deletes the lock row whoever holds it; no row is no error.
func (c *Core) ReleaseLockAny(ctx context.Context, identity string) error {
	_, err := c.writeStatement(ctx, `DELETE FROM locks WHERE identity = $1`, identity)
	return c.d.Wrap("release lock", err)
}

// RecordCols are the records table's columns, in RecordValues' order.
const RecordCols = `key, kind, client_key, wallet_id, api_key_id, principal, tool, fingerprint, identity,
	bucket, attempt, state, owner, permit_id, receipt, result, charged, created_at, updated_at`

// RecordValues are a record's values in RecordCols order.
func (d Dialect) RecordValues(r store.Record) []any {
	return []any{r.Key, r.Kind, r.ClientKey, r.WalletID, r.APIKeyID, r.Principal, r.Tool, r.Fingerprint, r.Identity,
		r.Bucket, r.Attempt, r.State, r.Owner, r.PermitID, r.Receipt, d.Verbatim(r.Result), r.Charged,
		Nanos(r.CreatedAt), Nanos(r.UpdatedAt)}
}

func scanRecord(r Row) (store.Record, error) {
	var rec store.Record
	var result []byte
	var created, updated int64
	err := r.Scan(&rec.Key, &rec.Kind, &rec.ClientKey, &rec.WalletID, &rec.APIKeyID, &rec.Principal, &rec.Tool,
		&rec.Fingerprint, &rec.Identity, &rec.Bucket, &rec.Attempt, &rec.State, &rec.Owner, &rec.PermitID,
		&rec.Receipt, &result, &rec.Charged, &created, &updated)
	if result != nil {
		rec.Result = result
	}
	rec.CreatedAt, rec.UpdatedAt = FromNanos(created), FromNanos(updated)
	return rec, err
}

// Placeholders is "$from, …, $(from+n-1)".
func Placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

// columns counts the columns of a comma-separated list.
func columns(list string) int { return strings.Count(list, ",") + 1 }

// Record reads a record.
func (c *Core) Record(ctx context.Context, key string) (store.Record, error) {
	r, err := scanRecord(c.db.Read().QueryRow(ctx, `SELECT `+RecordCols+` FROM records WHERE key = $1`, key))
	return r, c.d.Wrap("record", err)
}

// lockedRecord reads a record and holds its row to the end of the transaction.
func (c *Core) lockedRecord(ctx context.Context, q Querier, key string) (store.Record, error) {
	return scanRecord(q.QueryRow(ctx, `SELECT `+RecordCols+` FROM records WHERE key = $1`+c.d.ForUpdate, key))
}

// ownedRecord is lockedRecord for a write only the record's owner may make
// while it is in progress (and, with uncharged, not yet charged); any other
// record, or none, is store.ErrNotOwner.
func (c *Core) ownedRecord(ctx context.Context, q Querier, key, owner string, uncharged bool) (store.Record, error) {
	rec, err := c.lockedRecord(ctx, q, key)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (rec.Owner != owner || rec.State != store.StateInProgress || uncharged && rec.Charged) {
		return rec, store.ErrNotOwner
	}
	return rec, err
}

// RecordsByIdentity lists derived records of identity created since, or in progress.
func (c *Core) RecordsByIdentity(ctx context.Context, identity string, since time.Time) ([]store.Record, error) {
	out, err := c.recordsByIdentity(ctx, c.db.Read(), identity, since)
	return out, c.d.Wrap("records by identity", err)
}

func (c *Core) recordsByIdentity(ctx context.Context, q Querier, identity string, since time.Time) ([]store.Record, error) {
	rows, err := q.Query(ctx, SlotsQuery, SlotsArgs(identity, since)...)
	return Collect(rows, err, scanRecord)
}

// SlotsQuery reads RecordsByIdentity's records, with SlotsArgs.
const SlotsQuery = `SELECT ` + RecordCols + ` FROM records
	WHERE kind = $1 AND identity = $2 AND (created_at >= $3 OR state = $4) ORDER BY created_at, attempt`

// SlotsArgs are SlotsQuery's arguments.
func SlotsArgs(identity string, since time.Time) []any {
	return []any{store.KindDerived, identity, Nanos(since), store.StateInProgress}
}

// ScanRecords reads the records of a SlotsQuery.
func ScanRecords(rows Rows) ([]store.Record, error) { return Collect(rows, nil, scanRecord) }

var insertRecordSQL = `INSERT INTO records (` + RecordCols + `) VALUES (` + Placeholders(1, columns(RecordCols)) + `)
	ON CONFLICT (key) DO NOTHING`

// insertRecord inserts r unless its key exists; false when it does (where
// rows are locked one by one, an uncommitted insert of the key makes it
// wait for that one's outcome).
func (c *Core) insertRecord(ctx context.Context, q Querier, r store.Record) (bool, error) {
	n, err := q.Exec(ctx, insertRecordSQL, c.d.RecordValues(r)...)
	return n == 1, err
}

// deleteRecord removes rec and the auto permit minted under it, which the
// record names (PermitID): a permit and its record are written in one
// transaction, and a replacement deletes the record it replaces this way, so
// no other auto permit of the key outlives its record.
func deleteRecord(ctx context.Context, q Querier, rec store.Record) error {
	if _, err := q.Exec(ctx, `DELETE FROM permits WHERE auto AND id = $1`, rec.PermitID); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `DELETE FROM records WHERE key = $1`, rec.Key)
	return err
}

// Reservation is a ReserveRequest made ready to write: its auto permit
// names the record, and with a charge the record goes in charged.
type Reservation struct {
	r      store.ReserveRequest // as asked, for what it may replace
	Record store.Record
	Permit *store.Permit
	Charge *store.ChargeRequest // checked: For and Entry
}

func (c *Core) prepare(r store.ReserveRequest) (Reservation, error) {
	v := Reservation{r: r, Record: r.Record, Permit: r.Permit}
	if v.Record.Key == "" {
		return v, errors.New("empty key")
	}
	if v.Record.State == "" {
		v.Record.State = store.StateInProgress
	}
	if p := r.Permit; p != nil && p.Auto && p.RecordKey == "" {
		cp := *p
		cp.RecordKey = v.Record.Key // the record it was minted for (the record names it: PermitID)
		v.Permit = &cp
	}
	if r.Charge != nil {
		ch := r.Charge.For(v.Record)
		var err error
		if ch.Entry, err = Entry(ch.Entry, store.EntryDebit); err != nil {
			return v, fmt.Errorf("charge: %w", err)
		}
		v.Record, v.Charge = ch.Charged(v.Record), &ch
	}
	return v, nil
}

// Reserve claims the fence, runs AfterClaim, then inserts the record. The
// claim is an UPDATE of the lock row, so the row (or, under SQLite, the
// database) stays locked until commit: a takeover in between waits for it
// and, past the lock timeout, gets ErrBusy.
func (c *Core) Reserve(ctx context.Context, r store.ReserveRequest) (store.Record, bool, error) {
	v, err := c.prepare(r)
	if err != nil {
		return store.Record{}, false, c.d.Wrap("reserve record", err)
	}
	write := c.db.Write
	if r.AfterClaim != nil {
		if a, ok := c.db.(AloneWriter); ok {
			write = a.WriteAlone
		}
	} else if c.fast != nil {
		// The usual case, a key seen for the first time, in one statement
		// (fenced and charged too); a key that has a record, a lost fence
		// or a refused charge goes on to the transaction, which decides.
		created, err := c.fast.ReserveNew(ctx, v.Record, v.Permit, r.Fence, r.Release, v.Charge)
		if err != nil {
			return store.Record{}, false, c.d.Wrap("reserve record", err)
		}
		if created {
			return v.Record, true, nil
		}
	}
	var out store.Record
	var created bool
	err = write(ctx, func(q Querier) error {
		if f := r.Fence; f != nil {
			if err := ExecOne(ctx, q, store.ErrFenceLost,
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
		var err error
		out, created, err = c.reserveIn(ctx, q, v)
		if err == nil && !created {
			return ErrNoop
		}
		if err != nil || r.Fence == nil || !r.Release {
			return err
		}
		// The claim above holds the row: this deletes it.
		f := r.Fence
		if _, err := q.Exec(ctx, DeleteLock, f.Identity, f.Owner); err != nil {
			return fmt.Errorf("release lock: %w", err)
		}
		return nil
	})
	if err != nil {
		return store.Record{}, false, c.d.Wrap("reserve record", err)
	}
	return out, created, nil
}

// reserveIn inserts v's record, its permit and its charge in q's
// transaction, or, when its key has a record it does not replace, returns
// that one (false) having written nothing.
func (c *Core) reserveIn(ctx context.Context, q Querier, v Reservation) (store.Record, bool, error) {
	for range raceRetries {
		inserted, err := c.insertRecord(ctx, q, v.Record)
		if err != nil {
			return store.Record{}, false, err
		}
		if !inserted {
			existing, err := c.lockedRecord(ctx, q, v.Record.Key)
			if errors.Is(err, sql.ErrNoRows) {
				continue // abandoned since the insert
			}
			if err != nil {
				return store.Record{}, false, err
			}
			if !v.r.Replaces(existing) {
				return existing, false, nil
			}
			if err := deleteRecord(ctx, q, existing); err != nil {
				return store.Record{}, false, err
			}
			if _, err := c.insertRecord(ctx, q, v.Record); err != nil {
				return store.Record{}, false, err
			}
		}
		if v.Permit != nil {
			if err := InsertPermit(ctx, q, *v.Permit); err != nil {
				return store.Record{}, false, fmt.Errorf("permit: %w", err)
			}
		}
		if v.Charge != nil {
			// The record went in charged: a refusal here rolls it back
			// with its permit and whatever it replaced.
			if err := c.debit(ctx, q, *v.Charge, v.Charge.Entry); err != nil {
				return store.Record{}, false, fmt.Errorf("charge: %w", err)
			}
		}
		return v.Record, true, nil
	}
	return store.Record{}, false, store.ErrBusy
}

// ReserveSlot takes the identity's lock, reads its slots, lets r.Choose
// pick one and reserves it, in one transaction that deletes its lock row
// before it commits. The lock row still serialises twins: where rows are
// locked one by one, a twin's insert of the same row waits for this
// transaction's outcome, and then reads the slot it made. A DB with
// one-statement first calls tries it in two round trips first.
func (c *Core) ReserveSlot(ctx context.Context, r store.SlotRequest) (store.Record, bool, error) {
	if c.fast != nil {
		rec, created, decided, err := c.fast.ReserveSlot(ctx, r, c.prepare)
		if err != nil || decided {
			return rec, created, c.d.Wrap("reserve slot", err)
		}
	}
	var out store.Record
	var created bool
	err := c.db.Write(ctx, func(q Querier) error {
		out, created = store.Record{}, false
		_, took, err := c.acquire(ctx, q, r.Identity, r.Owner, r.Now, r.StaleAfter)
		if err != nil {
			return fmt.Errorf("acquire lock: %w", err)
		}
		slots, err := c.recordsByIdentity(ctx, q, r.Identity, r.Since)
		if err != nil {
			return fmt.Errorf("read slots: %w", err)
		}
		join, req := r.Choose(slots)
		if join != nil {
			out = *join
		} else {
			v, err := c.prepare(req)
			if err != nil {
				return err
			}
			if out, created, err = c.reserveIn(ctx, q, v); err != nil {
				return err
			}
		}
		if !created && !took {
			return ErrNoop // nothing to write: the lock row was only ever this transaction's
		}
		// A stale lock taken over stays taken from its holder, whatever
		// this call then did, as a takeover and a release would leave it.
		_, err = q.Exec(ctx, DeleteLock, r.Identity, r.Owner)
		return err
	})
	if err != nil {
		return store.Record{}, false, c.d.Wrap("reserve slot", err)
	}
	return out, created, nil
}

// Charge debits the wallet and spends the permit for a record its caller
// still owns.
func (c *Core) Charge(ctx context.Context, ch store.ChargeRequest) error {
	e, err := Entry(ch.Debit(), store.EntryDebit)
	if err != nil {
		return c.d.Wrap("charge", err)
	}
	if c.fast != nil {
		if ok, err := c.fast.Charge(ctx, ch, e); ok || err != nil {
			return c.d.Wrap("charge", err)
		}
	}
	err = c.db.Write(ctx, func(q Querier) error {
		// The claim first, as a conditional update (one statement, not a
		// read and a write): a refusal below rolls it back with the rest.
		var wallet string
		err := q.QueryRow(ctx, `UPDATE records SET charged = true, updated_at = $1
			WHERE key = $2 AND owner = $3 AND state = $4 AND NOT charged RETURNING wallet_id`,
			Nanos(ch.Now), ch.RecordKey, ch.Owner, store.StateInProgress).Scan(&wallet)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotOwner
		}
		if err != nil {
			return err
		}
		if e.WalletID == "" {
			e.WalletID = wallet
		}
		return c.debit(ctx, q, ch, e)
	})
	return c.d.Wrap("charge", err)
}

// debit spends the permit and debits the wallet for a claimed record; an
// amount of 0 does neither. Conditional updates, the permit's read back
// only when it finds nothing to update (to say why). The entry goes in
// before the wallet's update: its foreign key finds a missing wallet, so an
// update that then finds nothing is too little balance, and the wallet's
// row is held from its update to the commit only. A refusal is an error,
// so the transaction (or the batch's savepoint) undoes the claim and the
// permit's spend with it.
func (c *Core) debit(ctx context.Context, q Querier, ch store.ChargeRequest, e store.LedgerEntry) error {
	if e.Amount == 0 {
		return nil
	}
	n, err := q.Exec(ctx, `UPDATE permits SET spent = spent + $1 WHERE id = $2 AND expires_at > $3 AND budget - spent >= $1`,
		e.Amount, ch.PermitID, Nanos(ch.Now))
	if err != nil {
		return err
	}
	if n == 0 {
		return c.permitRefusal(ctx, q, ch.PermitID, ch.Now)
	}
	if err := InsertEntry(ctx, q, e); err != nil {
		return fmt.Errorf("wallet %q: %w", e.WalletID, c.d.Classify(err))
	}
	return ExecOne(ctx, q, store.ErrInsufficientFunds,
		`UPDATE wallets SET balance = balance - $1 WHERE id = $2 AND balance >= $1`, e.Amount, e.WalletID)
}

// permitRefusal says why a permit could not be spent.
func (c *Core) permitRefusal(ctx context.Context, q Querier, id string, now time.Time) error {
	var expires int64
	if err := q.QueryRow(ctx, `SELECT expires_at FROM permits WHERE id = $1`, id).Scan(&expires); err != nil {
		return fmt.Errorf("permit %q: %w", id, c.d.Classify(err))
	}
	if Nanos(now) >= expires {
		return store.ErrPermitExpired
	}
	return store.ErrPermitExhausted
}

// Finish stores the outcome of a record its caller still owns, and the
// refund or the dispatch row with it (Outcome.Check: never both).
func (c *Core) Finish(ctx context.Context, key, owner string, o store.Outcome) error {
	if err := o.Check(); err != nil {
		return fmt.Errorf("finish record: %w", err)
	}
	if o.Refund == nil && c.fast != nil && !o.Overwrite {
		ok, err := c.fast.Finish(ctx, key, owner, o)
		if err == nil && !ok {
			err = store.ErrNotOwner
		}
		return c.d.Wrap("finish record", err)
	}
	err := c.db.Write(ctx, func(q Querier) error {
		if o.Refund != nil {
			// The refund needs the record (its charge, its permit).
			rec, err := c.ownedRecord(ctx, q, key, owner, false)
			if err != nil {
				return err
			}
			if err := c.refund(ctx, q, rec, *o.Refund, o.Now, !o.RefundKeepsPermitSpend); err != nil {
				return err
			}
		}
		// Conditional on the owner and the state: no read of the record.
		state := store.StateInProgress
		if o.Overwrite {
			state = "" // BUG settle-overwritten: whatever it is now
		}
		if err := ExecOne(ctx, q, store.ErrNotOwner, `UPDATE records SET state = $1, receipt = $2, result = $3, updated_at = $4
			WHERE key = $5 AND owner = $6 AND (state = $7 OR $7 = '')`,
			o.State, o.Receipt, c.d.Verbatim(o.Result), Nanos(o.Now), key, owner, state); err != nil {
			return err
		}
		if o.Dispatch != nil {
			return InsertDispatch(ctx, q, *o.Dispatch)
		}
		return nil
	})
	return c.d.Wrap("finish record", err)
}

// refund gives a charged record's debit back to the permit and the wallet.
func (c *Core) refund(ctx context.Context, q Querier, rec store.Record, e store.LedgerEntry, now time.Time, permitToo bool) error {
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
	e, err := Entry(e, store.EntryRefund)
	if err != nil {
		return err
	}
	if permitToo {
		if _, err := q.Exec(ctx, `UPDATE permits SET spent = `+c.d.Greatest+`(spent - $1, 0) WHERE id = $2`, e.Amount, rec.PermitID); err != nil {
			return err
		}
	}
	return MoveBalance(ctx, q, e, e.Amount)
}

// Abandon deletes an uncharged in-progress record and its auto permit.
func (c *Core) Abandon(ctx context.Context, key, owner string) error {
	err := c.db.Write(ctx, func(q Querier) error {
		rec, err := c.ownedRecord(ctx, q, key, owner, true)
		if err != nil {
			return err
		}
		return deleteRecord(ctx, q, rec)
	})
	return c.d.Wrap("abandon record", err)
}

// UncertainQuery reads UncertainRecords' records ($1 in progress, $2 the
// staleness bound).
const UncertainQuery = `SELECT ` + RecordCols + ` FROM records
	WHERE state = $1 AND charged AND updated_at <= $2 ORDER BY updated_at, key`

// UncertainRecords lists the charged records in progress not written since
// staleBefore.
func (c *Core) UncertainRecords(ctx context.Context, staleBefore time.Time) ([]store.Record, error) {
	rows, err := c.db.Read().Query(ctx, UncertainQuery, store.StateInProgress, Nanos(staleBefore))
	out, err := Collect(rows, err, scanRecord)
	return out, c.d.Wrap("uncertain records", err)
}

// Resume stamps a stalled owner's record as written now, conditional on
// its owner and its state: one statement, ordered with a settlement's
// locked check by the row itself.
func (c *Core) Resume(ctx context.Context, key, owner string, now time.Time) error {
	err := c.db.Write(ctx, func(q Querier) error {
		return ExecOne(ctx, q, store.ErrNotOwner, `UPDATE records SET updated_at = $1 WHERE key = $2 AND owner = $3 AND state = $4`,
			Nanos(now), key, owner, store.StateInProgress)
	})
	return c.d.Wrap("resume record", err)
}

// Settle writes an operator's settlement. The record's row is held from the
// check to the write, so neither its owner's Finish nor a second settlement
// can slip in between.
func (c *Core) Settle(ctx context.Context, key string, st store.Settlement) error {
	if err := st.Check(); err != nil {
		return fmt.Errorf("settle record: %w", err)
	}
	o := st.Outcome
	err := c.db.Write(ctx, func(q Querier) error {
		rec, err := c.lockedRecord(ctx, q, key)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if rec.State != store.StateInProgress || !rec.Charged || rec.Owner != st.Owner || rec.UpdatedAt.After(st.StaleBefore) {
			return store.ErrNotUncertain
		}
		if o.Refund != nil {
			if err := c.refund(ctx, q, rec, *o.Refund, o.Now, true); err != nil {
				return err
			}
		}
		return ExecOne(ctx, q, store.ErrNotUncertain, `UPDATE records SET state = $1, receipt = $2, result = $3, updated_at = $4
			WHERE key = $5 AND owner = $6 AND state = $7`,
			o.State, o.Receipt, c.d.Verbatim(o.Result), Nanos(o.Now), key, st.Owner, store.StateInProgress)
	})
	return c.d.Wrap("settle record", err)
}

// The purge's statements. The state is written literally, not as a
// parameter, so PostgreSQL's planner matches the partial index
// records_finished (migration 0006) in a generic plan too. The delete
// repeats the select's conditions: between the two a failed_refunded
// record may be replaced by a new reservation under its key, which must
// stay.
const (
	purgeableSQL = `SELECT key, permit_id FROM records
	WHERE state <> 'in_progress' AND updated_at <= $1 ORDER BY updated_at LIMIT $2`
	purgeRecordSQL = `DELETE FROM records WHERE key = $1 AND state <> 'in_progress' AND updated_at <= $2`
	purgeAnySQL    = `DELETE FROM records WHERE key = $1 AND updated_at <= $2`
	purgePermitSQL = `DELETE FROM permits WHERE auto AND id = $1`
)

// PurgeRecords deletes finished records not written since before, at most
// limit of them in one transaction, so a purge holds the write lock only
// briefly however much has piled up.
func (c *Core) PurgeRecords(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n := 0
	err := c.db.Write(ctx, func(q Querier) error {
		n = 0
		type victim struct{ key, permit string }
		rows, err := q.Query(ctx, purgeableSQL, Nanos(before), limit)
		victims, err := Collect(rows, err, func(r Row) (victim, error) {
			var v victim
			return v, r.Scan(&v.key, &v.permit)
		})
		if err != nil {
			return err
		}
		for _, v := range victims {
			ok, err := purgeOne(ctx, q, v.key, v.permit, before)
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		return nil
	})
	return n, c.d.Wrap("purge records", err)
}

// PurgeRecord deletes one finished record not written since before.
func (c *Core) PurgeRecord(ctx context.Context, key string, before time.Time) (bool, error) {
	return c.purgeKey(ctx, key, before, purgeRecordSQL)
}

// PurgeRecordAny deletes key's record not written since before, whatever
// its state: only the purge-uncertain bug switch calls it.
func (c *Core) PurgeRecordAny(ctx context.Context, key string, before time.Time) (bool, error) {
	return c.purgeKey(ctx, key, before, purgeAnySQL)
}

// purgeKey deletes key's record with the statement del (key, before) and,
// when it did, the record's auto permit.
func (c *Core) purgeKey(ctx context.Context, key string, before time.Time, del string) (bool, error) {
	var done bool
	err := c.db.Write(ctx, func(q Querier) error {
		rec, err := c.lockedRecord(ctx, q, key)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoop
		}
		if err != nil {
			return err
		}
		done, err = purgeWith(ctx, q, del, key, rec.PermitID, before)
		return err
	})
	return done, c.d.Wrap("purge record", err)
}

// purgeOne deletes key's record if it is still finished and old enough,
// and then its auto permit.
func purgeOne(ctx context.Context, q Querier, key, permitID string, before time.Time) (bool, error) {
	return purgeWith(ctx, q, purgeRecordSQL, key, permitID, before)
}

// purgeWith runs del (key, before) and, when it deleted the record, deletes
// its auto permit.
func purgeWith(ctx context.Context, q Querier, del, key, permitID string, before time.Time) (bool, error) {
	n, err := q.Exec(ctx, del, key, Nanos(before))
	if err != nil || n == 0 {
		return false, err
	}
	_, err = q.Exec(ctx, purgePermitSQL, permitID)
	return true, err
}
