package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds the statement cache. Every statement this store runs
// (its own and the shared core's) is a constant text with parameters (a few
// filters pick among variants), so the bound is only a guard against a
// future text built from values.
const maxCachedStmts = 256

// stmtCache keeps one prepared statement per SQL text. modernc.org/sqlite
// parses the SQL again on every unprepared query, which was a fifth of a
// keyed first call's CPU; database/sql keeps a prepared *sql.Stmt prepared on
// each pooled connection it has run on, so a cached text is parsed once per
// connection.
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: make(map[string]*sql.Stmt)}
}

// get returns the statement for query, preparing it on first use; nil when
// it cannot be prepared (the caller then runs the text unprepared, which
// reports the same error in context).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.RLock()
	st := c.m[query]
	c.mu.RUnlock()
	if st != nil {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st
	}
	if len(c.m) >= maxCachedStmts {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.m[query] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		_ = st.Close()
		delete(c.m, q)
	}
}

// conn runs statements through the cache, on the database or inside one
// write transaction (tx non-nil). It has the method set of *sql.DB and
// *sql.Tx that this package uses, so queries read the same either way.
type conn struct {
	c  *stmtCache
	tx *sql.Tx
	// run, when set, replaces the context statements are given: a write
	// that has started runs to its end. Cancelling a statement interrupts
	// the connection, and SQLite may then roll back the whole transaction,
	// which in a batch holds other callers' writes.
	run context.Context
}

func (q conn) ctx(ctx context.Context) context.Context {
	if q.run != nil {
		return q.run
	}
	return ctx
}

func (q conn) stmt(ctx context.Context, query string) *sql.Stmt {
	st := q.c.get(ctx, query)
	if st != nil && q.tx != nil {
		// Bound to the transaction's connection; database/sql reuses the
		// statement already prepared there and closes only this binding
		// when the transaction ends.
		st = q.tx.StmtContext(ctx, st)
	}
	return st
}

func (q conn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = q.ctx(ctx)
	if st := q.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if q.tx != nil {
		return q.tx.ExecContext(ctx, query, args...)
	}
	return q.c.db.ExecContext(ctx, query, args...)
}

func (q conn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = q.ctx(ctx)
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if q.tx != nil {
		return q.tx.QueryContext(ctx, query, args...)
	}
	return q.c.db.QueryContext(ctx, query, args...)
}

func (q conn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = q.ctx(ctx)
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if q.tx != nil {
		return q.tx.QueryRowContext(ctx, query, args...)
	}
	return q.c.db.QueryRowContext(ctx, query, args...)
}
