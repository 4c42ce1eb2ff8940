package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpconform/mcpconform/reference/store"
)

// The first call's commits as single statements. A statement outside a
// transaction block is its own transaction: all of it or none of it, in one
// round trip, and the rows it locks are held only while the server runs it
// and commits. The transaction forms (records.go) still serve every other
// case: a reservation that finds a record, a fenced one, a refund.

// placeholders is "$from, …, $(from+n-1)".
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

// recordValues are a record's values in recordCols order.
func recordValues(r store.Record) []any {
	return []any{r.Key, r.Kind, r.ClientKey, r.WalletID, r.APIKeyID, r.Principal, r.Tool, r.Fingerprint, r.Identity,
		r.Bucket, r.Attempt, r.State, r.Owner, r.PermitID, r.Receipt, resultBytes(r.Result), r.Charged,
		nanos(r.CreatedAt), nanos(r.UpdatedAt)}
}

const permitCols = `id, wallet_id, api_key_id, tool, budget, spent, expires_at, auto, record_key, created_at`

func permitValues(p store.Permit) []any {
	return []any{p.ID, p.WalletID, p.APIKeyID, p.Tool, p.Budget, p.Spent, nanos(p.ExpiresAt), p.Auto, p.RecordKey, nanos(p.CreatedAt)}
}

// reserveNew inserts a record and its permit in one statement, if no record
// has its key; false (nothing written) if one does.
func (s *Store) reserveNew(ctx context.Context, rec store.Record, permit *store.Permit) (bool, error) {
	rv := recordValues(rec)
	if permit == nil {
		tag, err := s.pool.Exec(ctx, `INSERT INTO records (`+recordCols+`) VALUES (`+placeholders(1, len(rv))+`)
			ON CONFLICT (key) DO NOTHING`, rv...)
		return tag.RowsAffected() == 1, err
	}
	pv := permitValues(*permit)
	var n int
	err := s.pool.QueryRow(ctx, `WITH rec AS (
			INSERT INTO records (`+recordCols+`) VALUES (`+placeholders(1, len(rv))+`)
			ON CONFLICT (key) DO NOTHING RETURNING key),
		permit AS (
			INSERT INTO permits (`+permitCols+`) SELECT `+placeholders(len(rv)+1, len(pv))+` FROM rec)
		SELECT count(*) FROM rec`, append(rv, pv...)...).Scan(&n)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// chargeSQL charges in one statement: the record is marked charged, then
// the permit spent, then the wallet debited, each conditional on the step
// before (so the rows are locked in the store's order, the wallet last),
// each row written once. The debit entry names the wallet the debit hit:
// when the permit or the wallet step found nothing to do (expired,
// exhausted, too little balance, missing), its wallet_id is NULL and the
// NOT NULL column fails the whole statement, which undoes the steps before.
// No record to mark writes nothing and returns 0.
const chargeSQL = `WITH mark AS (
		UPDATE records SET charged = true, updated_at = $5
		WHERE key = $1 AND owner = $2 AND state = '` + store.StateInProgress + `' AND NOT charged
		RETURNING wallet_id),
	spend AS (
		UPDATE permits SET spent = spent + $6
		WHERE id = $3 AND $5 < expires_at AND budget - spent >= $6 AND EXISTS (SELECT 1 FROM mark)
		RETURNING id),
	debit AS (
		UPDATE wallets SET balance = balance - $6
		WHERE id = coalesce(nullif($4::text, ''), (SELECT wallet_id FROM mark)) AND balance >= $6 AND EXISTS (SELECT 1 FROM spend)
		RETURNING id),
	entry AS (
		INSERT INTO ledger_entries (id, wallet_id, kind, amount, record_key, receipt, tool, at)
		SELECT $7, debit.id, '` + store.EntryDebit + `', $6, $8, $9, $10, $11 FROM mark LEFT JOIN debit ON true
		RETURNING 1)
	SELECT count(*) FROM entry`

// charge tries Charge as one statement (chargeSQL); false when it wrote
// nothing because a check failed, which the transaction (chargeTx) then
// names. e is the checked entry.
func (s *Store) charge(ctx context.Context, c store.ChargeRequest, e store.LedgerEntry) (bool, error) {
	now := nanos(c.Now)
	if e.Amount == 0 {
		tag, err := s.pool.Exec(ctx, `UPDATE records SET charged = true, updated_at = $1
			WHERE key = $2 AND owner = $3 AND state = '`+store.StateInProgress+`' AND NOT charged`, now, c.RecordKey, c.Owner)
		if err == nil && tag.RowsAffected() == 0 {
			return false, store.ErrNotOwner
		}
		return err == nil, err
	}
	var n int
	err := s.pool.QueryRow(ctx, chargeSQL, c.RecordKey, c.Owner, c.PermitID, e.WalletID, now, e.Amount,
		e.ID, e.RecordKey, e.Receipt, e.Tool, nanos(e.At)).Scan(&n)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23502" && pe.ColumnName == "wallet_id" { // not_null_violation
		return false, nil
	}
	return n == 1, err
}

// finish stores a completed outcome and its dispatch row in one statement,
// conditional on the owner; false when the record is not the owner's in
// progress (nothing written).
func (s *Store) finish(ctx context.Context, key, owner string, o store.Outcome) (bool, error) {
	args := []any{key, owner, o.State, o.Receipt, resultBytes(o.Result), nanos(o.Now)}
	update := `UPDATE records SET state = $3, receipt = $4, result = $5, updated_at = $6
		WHERE key = $1 AND owner = $2 AND state = '` + store.StateInProgress + `'`
	if o.Dispatch == nil {
		tag, err := s.pool.Exec(ctx, update, args...)
		return tag.RowsAffected() == 1, err
	}
	d := o.Dispatch
	var n int
	err := s.pool.QueryRow(ctx, `WITH rec AS (`+update+` RETURNING key),
		dispatch AS (
			INSERT INTO dispatches (id, tool, record_key, fingerprint, wallet_id, at) SELECT $7, $8, $9, $10, $11, $12 FROM rec)
		SELECT count(*) FROM rec`,
		append(args, newID(d.ID), d.Tool, d.RecordKey, d.Fingerprint, d.WalletID, nanos(d.At))...).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("dispatch: %w", err)
	}
	return n == 1, nil
}

// tryLock inserts a lock row in one statement; false when the identity
// already has one (nothing written).
func (s *Store) tryLock(ctx context.Context, identity, owner string, at int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO locks (identity, owner, fence, acquired_at) VALUES ($1, $2, 1, $3)
		ON CONFLICT (identity) DO NOTHING`, identity, owner, at)
	return tag.RowsAffected() == 1, err
}
