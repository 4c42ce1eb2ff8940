package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"modernc.org/sqlite"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

// dialect is what SQLite does differently, for the shared core.
var dialect = sqlstore.Dialect{
	Sentinel: sentinel,
	Types: sqlstore.ColumnTypes{
		Int64: "INTEGER", Bool: "INTEGER", Bytes: "BLOB", JSON: "TEXT", Verbatim: "TEXT",
		OrderedText: "TEXT", // SQLite's default collation, BINARY, is bytewise
		Seq:         "INTEGER PRIMARY KEY AUTOINCREMENT",
	},
	ForUpdate: "", // a write transaction holds the whole database (BEGIN IMMEDIATE)
	Greatest:  "max",
	HasPrefix: func(col, param string) string { return "substr(" + col + ", 1, length(" + param + ")) = " + param },
	Verbatim:  resultText,
}

// resultText keeps a nil result NULL and every other one byte for byte, as
// text: bytes would be a BLOB, which SQLite's text comparisons and JSON
// functions treat apart from the same text.
func resultText(r []byte) any {
	if r == nil {
		return nil
	}
	return string(r)
}

// SQLite result codes; extended codes carry the primary one in the low byte.
const (
	codeBusy       = 5
	codeLocked     = 6
	codeConstraint = 19
	codePrimaryKey = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	codeUnique     = 2067 // SQLITE_CONSTRAINT_UNIQUE
	codeForeignKey = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
)

// sentinel maps SQLite result codes to the store's errors.
func sentinel(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() & 0xff {
	case codeBusy, codeLocked:
		return store.ErrBusy
	case codeConstraint:
		switch se.Code() {
		case codePrimaryKey, codeUnique:
			return store.ErrExists
		case codeForeignKey:
			return store.ErrNotFound
		}
	}
	return nil
}

// coreDB gives the core this store's statement cache and write queue.
type coreDB struct {
	s    *Store
	read sqlstore.Querier // s.read(), boxed once: reads are on every call's path
}

func (d coreDB) Read() sqlstore.Querier { return d.read }

func (d coreDB) Write(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return d.s.write(ctx, func(tx conn) error { return fn(connQuerier{tx}) })
}

// WriteAlone is Write in a batch of its own, for an fn that may stall.
func (d coreDB) WriteAlone(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return d.s.writeAlone(ctx, func(tx conn) error { return fn(connQuerier{tx}) })
}

// connQuerier is a conn as the core's Querier.
type connQuerier struct{ c conn }

func (q connQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q connQuerier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q connQuerier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return q.c.QueryRowContext(ctx, query, args...)
}

// sqlRows is *sql.Rows as the core's Rows. Close drops its error, as
// pgx's has none: a read that went wrong says so in Err.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

func classify(err error) error        { return dialect.Classify(err) }
func wrap(op string, err error) error { return dialect.Wrap(op, err) }
