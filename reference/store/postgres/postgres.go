// Package postgres is the shared store: one PostgreSQL database that several
// gateway processes use at once.
//
// Transactions run at READ COMMITTED. Every read-modify-write locks the rows
// it reads (FOR NO KEY UPDATE, or a conditional UPDATE checked by row count),
// in one order: locks, records, permits, wallets (the wallet, the row every
// call of a wallet shares, last, so it is held the shortest). Every
// connection of the pool has lock_timeout set when it connects, so a row
// held by another transaction (a claim paused at AfterClaim, say) fails with
// 55P03 after LockTimeout: store.ErrBusy. The first call's commits are one
// statement each where they can be (statements.go): one round trip, with
// the locks held only while the server runs it.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

// DefaultLockTimeout is the lock_timeout when Options leaves it zero.
const DefaultLockTimeout = 5 * time.Second

// DefaultMaxConns is the pool's size when the DSN does not set
// pool_max_conns.
const DefaultMaxConns = 16

// Options tune a Store.
type Options struct {
	// LockTimeout is how long a write waits for a row another transaction
	// holds before failing with store.ErrBusy (lock_timeout, set on every
	// connection). Zero means DefaultLockTimeout.
	LockTimeout time.Duration
}

// Store implements store.Store on a PostgreSQL database.
type Store struct {
	*sqlstore.Core // wallets, keys, principals, trusts, tools, servers, permits, notes, dispatch log
	pool           *pgxpool.Pool
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.DebitAppender   = (*Store)(nil)
	_ store.RefundAppender  = (*Store)(nil)
	_ store.AnyLockReleaser = (*Store)(nil)
	_ store.AnyRecordPurger = (*Store)(nil)
)

// Open connects a pool to dsn (URL or keyword/value form; pgxpool's
// pool_* parameters apply). It does not migrate; call Migrate.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	// Sent with the start-up message: no statement of its own, on any
	// connection, ever (it was one round trip more per transaction). A DSN's
	// own lock_timeout gives way to Options, as it did when it was set per
	// transaction.
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(1, timeout.Milliseconds()), 10) + "ms"
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgxpool's default, max(4, cores), makes concurrent calls queue
		// for a connection while others wait on a commit (the server's
		// WAL flush), not on this machine's cores.
		cfg.MaxConns = max(cfg.MaxConns, DefaultMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s := &Store{pool: pool}
	s.Core = sqlstore.New(dialect, coreDB{s: s, read: pgxQuerier{pool}})
	return s, nil
}

// Close closes the pool, waiting for connections in use to come back.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Migrate applies the migrations not yet recorded, under an advisory lock
// on the current schema so concurrent processes take turns.
func (s *Store) Migrate(ctx context.Context) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('mcpconform.migrate'), hashtext(coalesce(current_schema(), '')))`); err != nil {
			return err
		}
		return dialect.Migrate(ctx, pgxQuerier{tx}, func(ctx context.Context, body string) error {
			// No arguments: pgx sends it as one simple query, all statements.
			_, err := tx.Exec(ctx, body)
			return err
		})
	})
	return wrap("migrate", err)
}

// write runs fn in one transaction (lock_timeout is the connection's).
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	if err := fn(tx); err != nil {
		if errors.Is(err, sqlstore.ErrNoop) {
			return nil
		}
		return err
	}
	return tx.Commit(ctx)
}
