// Package sqlstore is the SQL written once for both stores: the statements
// and the rules around them, over a small querier interface that a pgx pool
// or transaction and a database/sql connection both fit behind a few lines
// of adapter.
//
// The statements are PostgreSQL's text, and SQLite runs the same text:
// $n placeholders (modernc.org/sqlite binds $n by ordinal, as ?n), ON
// CONFLICT upserts, true/false literals (SQLite 3.23 and later) and
// RETURNING (3.35 and later). Times are int64 Unix nanoseconds and booleans
// Go bools in both. What still differs lives in a Dialect; what a store does
// around its transactions (SQLite's group commit, PostgreSQL's pool and
// lock_timeout) stays in the store, behind DB.
//
// The records, locks and charges (records.go) are here too, with the
// row-locking clause, greatest or max and the prefix test in the Dialect.
// A store that can do better than the shared transaction forms says so
// through optional interfaces of its DB, which the Core tries first:
// PostgreSQL's one-statement first-call writes (FirstCall) and its writes
// of a single statement outside any transaction (StatementWriter); SQLite's
// write in a batch of its own for a transaction that may stall (AloneWriter).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

// Dialect is what one database does differently from the other.
type Dialect struct {
	// Types are the column types the migrations are rendered with.
	Types ColumnTypes
	// Sentinel maps a driver error, by the driver's error code and never by
	// its message, to store.ErrBusy, store.ErrExists or store.ErrNotFound;
	// nil when none applies.
	Sentinel func(err error) error
	// ForUpdate ends a read that holds the rows it reads to the end of its
	// transaction: " FOR NO KEY UPDATE" where rows are locked one by one,
	// "" where the transaction holds the whole database (SQLite's write lock).
	ForUpdate string
	// Greatest names the function of the larger of its arguments.
	Greatest string
	// HasPrefix is the condition that text column col starts with the text
	// placeholder param. Never LIKE: identities may hold % and _.
	HasPrefix func(col, param string) string
	// Verbatim is how a {{verbatim}} column's value is bound, byte for byte;
	// nil binds NULL.
	Verbatim func(b []byte) any
}

// Classify turns a driver error into the store's sentinels, keeping the
// driver's error in the chain. It is idempotent, so an inner step may
// classify early for a clearer message.
func (d Dialect) Classify(err error) error {
	if err == nil || errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
		return err
	}
	// pgx's ErrNoRows is database/sql's too (errors.Is), so one test serves both.
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if s := d.Sentinel(err); s != nil {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

// Wrap adds an operation's context to a classified error; nil stays nil.
func (d Dialect) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, d.Classify(err))
}

// Row is one row of a result, or the error that there is none
// (sql.ErrNoRows, or an error that is it under errors.Is).
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result being read (pgx.Rows fits as it is).
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// Querier runs statements, on a pool or inside a transaction.
type Querier interface {
	// Exec runs a statement and says how many rows it touched.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// DB is how the core reaches a store's database.
type DB interface {
	// Read runs statements outside any transaction.
	Read() Querier
	// Write runs fn in one transaction, committed when Write returns nil;
	// an fn that fails is rolled back and its error is Write's (ErrNoop's:
	// nil). How (batched, on which connection, waiting how long) is the
	// store's.
	Write(ctx context.Context, fn func(q Querier) error) error
}

// Core implements the part of store.Store that is the same SQL on both
// databases; a store embeds it and adds the rest.
type Core struct {
	d    Dialect
	db   DB
	fast FirstCall       // db's, or nil
	stmt StatementWriter // db's, or nil
	// afterLockRead, set by tests only (SetAfterLockRead).
	afterLockRead func(ctx context.Context)
}

// New returns the core of a store.
func New(d Dialect, db DB) *Core {
	c := &Core{d: d, db: db}
	c.fast, _ = db.(FirstCall)
	c.stmt, _ = db.(StatementWriter)
	return c
}

// Nanos is how times are stored: Unix nanoseconds, 0 standing for the zero
// time, whose UnixNano is undefined.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos reads back what Nanos wrote, in UTC.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// NewID returns id, or a fresh row id (store.NewRowID) when id is empty.
func NewID(id string) string {
	if id == "" {
		return store.NewRowID("")
	}
	return id
}

// ExecOne runs a statement that must touch a row; touching none is missing.
func ExecOne(ctx context.Context, q Querier, missing error, query string, args ...any) error {
	n, err := q.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return missing
	}
	return nil
}

// Collect reads every row of a Query's answer with scan.
func Collect[T any](rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
