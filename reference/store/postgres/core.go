package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

// dialect is what PostgreSQL does differently, for the shared core.
var dialect = sqlstore.Dialect{
	Sentinel: sentinel,
	Types: sqlstore.ColumnTypes{
		Int64: "BIGINT", Bool: "BOOLEAN", Bytes: "BYTEA", JSON: "JSONB", OrderedText: `TEXT COLLATE "C"`,
		Verbatim: "BYTEA", // jsonb would reformat it
		Seq:      "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	},
	ForUpdate: " FOR NO KEY UPDATE",
	Greatest:  "greatest",
	HasPrefix: func(col, param string) string { return "starts_with(" + col + ", " + param + ")" },
	// A plain []byte: a json.RawMessage would be encoded as JSON, not
	// stored byte for byte. nil stays NULL.
	Verbatim: func(b []byte) any { return b },
}

// sentinel maps SQLSTATEs to the store's errors.
func sentinel(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	switch pe.Code {
	case "55P03", "40001", "40P01": // lock_not_available, serialization_failure, deadlock_detected
		return store.ErrBusy
	case "23505": // unique_violation
		return store.ErrExists
	case "23503": // foreign_key_violation
		return store.ErrNotFound
	}
	return nil
}

// coreDB gives the core this store's pool and transactions.
type coreDB struct {
	s    *Store
	read sqlstore.Querier // the pool, boxed once: reads are on every call's path
}

func (d coreDB) Read() sqlstore.Querier { return d.read }

// WriteStatement is the pool: a statement outside a transaction block is
// its own transaction, in one round trip.
func (d coreDB) WriteStatement() sqlstore.Querier { return d.read }

func (d coreDB) Write(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return d.s.write(ctx, func(tx pgx.Tx) error { return fn(pgxQuerier{tx}) })
}

// pgxQuerier is a pool or a transaction as the core's Querier.
type pgxQuerier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (p pgxQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := p.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (p pgxQuerier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := p.q.Query(ctx, query, args...)
	return rows, err
}

func (p pgxQuerier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return p.q.QueryRow(ctx, query, args...)
}

func wrap(op string, err error) error { return dialect.Wrap(op, err) }
func nanos(t time.Time) int64         { return sqlstore.Nanos(t) }
