package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

// The first call's commits as single statements. A statement outside a
// transaction block is its own transaction: all of it or none of it, in one
// round trip, and the rows it locks are held only while the server runs it
// and commits. They are coreDB's sqlstore.FirstCall, which the shared core
// tries first; its transaction forms still serve every other case: a
// reservation that finds a record, a lost fence, a refused charge, a refund.

// stmt is one statement's text built with its arguments, so a variant
// names each argument by its position whatever the variant holds. The
// variants are few (fence or not, which permit, free or not): pgx prepares
// each text once per connection.
type stmt struct {
	text strings.Builder
	args []any
}

// arg adds an argument and returns its placeholder.
func (q *stmt) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// list adds arguments and returns their placeholders, comma separated.
func (q *stmt) list(vs []any) string {
	from := len(q.args) + 1
	q.args = append(q.args, vs...)
	return sqlstore.Placeholders(from, len(vs))
}

func (q *stmt) add(parts ...string) {
	for _, p := range parts {
		q.text.WriteString(p)
	}
}

// debit adds the charge's money movement to a statement whose CTE from has
// returned the claimed record (one row, or none when the claim found
// nothing to do): the permit spent (unless spend is false: a permit minted
// by the same statement is inserted spent), then the wallet debited, each
// conditional on the step before, so rows are locked in the store's order.
// The debit entry names the wallet the debit hit: when the permit or the
// wallet step found nothing to do (expired, exhausted, too little balance,
// missing), its wallet_id is NULL and the NOT NULL column fails the whole
// statement (refused reports that error), which undoes the steps before.
// wallet is an SQL expression for the wallet to debit.
func (q *stmt) debit(from, wallet string, c store.ChargeRequest, e store.LedgerEntry, spend bool) {
	amount := q.arg(e.Amount)
	before := from
	if spend {
		q.add(`, spend AS (UPDATE permits SET spent = spent + `, amount, ` WHERE id = `, q.arg(c.PermitID), ` AND `, q.arg(nanos(c.Now)),
			` < expires_at AND budget - spent >= `, amount, ` AND EXISTS (SELECT 1 FROM `, from, `) RETURNING id)`)
		before = "spend"
	}
	q.add(`, debit AS (UPDATE wallets SET balance = balance - `, amount, ` WHERE id = `, wallet, ` AND balance >= `, amount,
		` AND EXISTS (SELECT 1 FROM `, before, `) RETURNING id)`)
	q.add(`, entry AS (INSERT INTO ledger_entries (id, wallet_id, kind, amount, record_key, receipt, tool, at) SELECT `,
		q.arg(e.ID), `, debit.id, '`+store.EntryDebit+`', `, amount, `, `, q.arg(e.RecordKey), `, `, q.arg(e.Receipt), `, `,
		q.arg(e.Tool), `, `, q.arg(nanos(e.At)), ` FROM `, from, ` LEFT JOIN debit ON true RETURNING 1)`)
}

// one runs q on on, and q ends by counting what it wrote: true for one
// row; false, nothing written, when a check of its charge refused it.
func one(ctx context.Context, on sqlstore.Querier, q *stmt) (bool, error) {
	var n int
	err := on.QueryRow(ctx, q.text.String(), q.args...).Scan(&n)
	if refused(err) {
		return false, nil
	}
	return n == 1, err
}

// refused: the statement failed on the debit entry's NULL wallet_id, i.e.
// a check of the charge did not hold; nothing was written.
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23502" && pe.ColumnName == "wallet_id" // not_null_violation
}

// ReserveNew makes a reservation in one statement when its key is new: the
// fence claim, the record, its permit, with a charge the permit's spend and
// the debit, and with release the lock row's deletion. false, nothing
// written, when the key has a record, the fence is lost or the charge is
// refused: the core's transaction form then decides, and names the refusal.
// charge is nil or checked (For, Entry); rec is already marked charged.
func (d coreDB) ReserveNew(ctx context.Context, rec store.Record, permit *store.Permit, fence *store.Fence, release bool,
	charge *store.ChargeRequest) (bool, error) {
	q := reserveNew(rec, permit, fence, release, charge)
	if q == nil {
		return false, nil
	}
	return one(ctx, d.read, q)
}

// reserveNew is ReserveNew's statement, which ends by counting the records
// it created; nil when the new permit cannot pay the charge.
func reserveNew(rec store.Record, permit *store.Permit, fence *store.Fence, release bool, charge *store.ChargeRequest) *stmt {
	q := &stmt{}
	q.add(`WITH `)
	guard := ""
	var identity, owner, gen string
	if fence != nil {
		// A locking read, not the transaction form's no-op update: one
		// statement may not both update the row and delete it (release).
		identity, owner, gen = q.arg(fence.Identity), q.arg(fence.Owner), q.arg(fence.Fence)
		q.add(`fence AS (SELECT 1 FROM locks WHERE identity = `, identity, ` AND owner = `, owner, ` AND fence = `, gen,
			` FOR NO KEY UPDATE), `)
		guard = ` WHERE EXISTS (SELECT 1 FROM fence)`
	}
	q.add(`rec AS (INSERT INTO records (`+sqlstore.RecordCols+`) SELECT `, q.list(dialect.RecordValues(rec)), guard,
		` ON CONFLICT (key) DO NOTHING RETURNING key)`)
	if fence != nil && release {
		q.add(`, release AS (DELETE FROM locks WHERE identity = `, identity, ` AND owner = `, owner, ` AND fence = `, gen,
			` AND EXISTS (SELECT 1 FROM rec))`)
	}
	spend := charge != nil && charge.Entry.Amount > 0
	if permit != nil {
		p := *permit
		if spend {
			// Inserted spent: a statement's parts do not see each other's
			// rows, so the new permit cannot be updated by a part after.
			if nanos(charge.Now) >= nanos(p.ExpiresAt) || p.Budget-p.Spent < charge.Entry.Amount {
				return nil
			}
			p.Spent += charge.Entry.Amount
		}
		q.add(`, permit AS (INSERT INTO permits (`+sqlstore.PermitCols+`) SELECT `, q.list(sqlstore.PermitValues(p)), ` FROM rec)`)
	}
	if spend {
		q.debit("rec", q.arg(charge.Entry.WalletID), *charge, charge.Entry, permit == nil)
	}
	q.add(` SELECT count(*) FROM rec`)
	return q
}

// Charge tries store.Store's Charge as one statement: the record is marked
// charged, then the money moves (stmt.debit), each row written once. false
// when it wrote nothing because a check failed, which the core's
// transaction form then names. e is the checked entry.
func (d coreDB) Charge(ctx context.Context, c store.ChargeRequest, e store.LedgerEntry) (bool, error) {
	now := nanos(c.Now)
	if e.Amount == 0 {
		tag, err := d.s.pool.Exec(ctx, `UPDATE records SET charged = true, updated_at = $1
			WHERE key = $2 AND owner = $3 AND state = '`+store.StateInProgress+`' AND NOT charged`, now, c.RecordKey, c.Owner)
		if err == nil && tag.RowsAffected() == 0 {
			return false, store.ErrNotOwner
		}
		return err == nil, err
	}
	q := &stmt{}
	q.add(`WITH mark AS (UPDATE records SET charged = true, updated_at = `, q.arg(now), ` WHERE key = `, q.arg(c.RecordKey),
		` AND owner = `, q.arg(c.Owner), ` AND state = '`+store.StateInProgress+`' AND NOT charged RETURNING wallet_id)`)
	q.debit("mark", `coalesce(nullif(`+q.arg(e.WalletID)+`::text, ''), (SELECT wallet_id FROM mark))`, c, e, true)
	q.add(` SELECT count(*) FROM entry`)
	return one(ctx, d.read, q)
}

// Finish stores an outcome without a refund, with its dispatch row if any,
// in one statement conditional on the owner; false when the record is not
// the owner's in progress (nothing written).
func (d coreDB) Finish(ctx context.Context, key, owner string, o store.Outcome) (bool, error) {
	args := []any{key, owner, o.State, o.Receipt, dialect.Verbatim(o.Result), nanos(o.Now)}
	update := `UPDATE records SET state = $3, receipt = $4, result = $5, updated_at = $6
		WHERE key = $1 AND owner = $2 AND state = '` + store.StateInProgress + `'`
	if o.Dispatch == nil {
		tag, err := d.s.pool.Exec(ctx, update, args...)
		return tag.RowsAffected() == 1, err
	}
	disp := o.Dispatch
	var n int
	err := d.s.pool.QueryRow(ctx, `WITH rec AS (`+update+` RETURNING key),
		dispatch AS (
			INSERT INTO dispatches (id, tool, record_key, fingerprint, wallet_id, at) SELECT $7, $8, $9, $10, $11, $12 FROM rec)
		SELECT count(*) FROM rec`,
		append(args, sqlstore.NewID(disp.ID), disp.Tool, disp.RecordKey, disp.Fingerprint, disp.WalletID, nanos(disp.At))...).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("dispatch: %w", err)
	}
	return n == 1, nil
}
