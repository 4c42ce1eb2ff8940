// Package sqlite is the embedded store: one database file that several gateway
// processes may share, serialised by SQLite's own file locks.
//
// Every write runs in a BEGIN IMMEDIATE transaction (the DSN's _txlock): the
// write lock is taken before the first read, so a read-modify-write never has
// to upgrade a read lock, which under WAL fails at once with SQLITE_BUSY
// instead of waiting. busy_timeout bounds the wait; running out of it is
// store.ErrBusy.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite"

	"github.com/mcpconform/mcpconform/reference/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultLockTimeout is the busy_timeout when Options leaves it zero.
const DefaultLockTimeout = 5 * time.Second

// Options tune a Store.
type Options struct {
	// LockTimeout is how long a write waits for another connection's write
	// lock before failing with store.ErrBusy (SQLite's busy_timeout).
	// Zero means DefaultLockTimeout.
	LockTimeout time.Duration
}

// Store implements store.Store on one SQLite database file.
type Store struct {
	db *sql.DB
	// writer admits one write transaction of this process at a time. SQLite
	// admits one writer per file anyway; without this, this process's own
	// writers would contend through busy_timeout, which polls with sleeps of
	// up to 100 ms instead of queueing, and a burst of first calls would pay
	// those sleeps as its tail latency. Other processes on the same file are
	// still kept out by SQLite's lock and busy_timeout.
	writer      chan struct{}
	lockTimeout time.Duration
	stmts       *stmtCache
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path. It does not
// migrate; call Migrate. path must name a file: an in-memory database would
// be a different database on every pooled connection.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open sqlite: invalid path %q", path)
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(max(1, timeout.Milliseconds()), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	// In WAL mode NORMAL syncs at checkpoints, not at every commit: a
	// committed transaction survives the process being killed (the WAL is in
	// the OS's page cache), and only a power loss can take the last commits.
	// The reference gateway's promise is the former ("nothing is lost when a
	// process is killed"); FULL would cost an fsync per write transaction,
	// and a first call makes several.
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// The first connection switches the file to WAL before the pool opens
	// more, so they do not race each other for that change.
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite: %w", classify(err))
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("open sqlite: journal mode is %q, want wal", mode)
	}
	// Keep every pooled connection: opening one re-reads the schema and runs
	// the pragmas, and its prepared statements would go with it.
	db.SetMaxIdleConns(maxConns)
	db.SetMaxOpenConns(maxConns)
	return &Store{db: db, writer: make(chan struct{}, 1), lockTimeout: timeout, stmts: newStmtCache(db)}, nil
}

// maxConns bounds the pool: one writer at a time, the rest readers (WAL lets
// them read beside it).
const maxConns = 16

// read runs statements on the pool, outside any transaction.
func (s *Store) read() conn { return conn{c: s.stmts} }

// Close closes the database.
func (s *Store) Close() error {
	s.stmts.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close sqlite: %w", err)
	}
	return nil
}

// Migrate applies the embedded migrations not yet recorded. Concurrent callers
// (other processes included) serialise on the immediate transaction.
func (s *Store) Migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	err = s.write(ctx, func(tx conn) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
			return err
		}
		for _, name := range names { // fs.Glob sorts, so versions apply in order
			version, err := migrationVersion(name)
			if err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			// A migration is a script of many statements, run once: not cached.
			if _, err := tx.tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, version); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("migrate", err)
}

func migrationVersion(name string) (int, error) {
	base := strings.TrimPrefix(name, "migrations/")
	prefix, _, ok := strings.Cut(base, "_")
	v, err := strconv.Atoi(prefix)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("migration %s: name must start with a positive version and _", name)
	}
	return v, nil
}

// errNoop ends a write transaction with a rollback and no error: the call
// found nothing to do and must leave no trace.
var errNoop = errors.New("noop")

// write runs fn in one immediate transaction, after this process's earlier
// writes. Waiting longer than the lock timeout for them is store.ErrBusy, as
// waiting that long for another process's write lock is.
func (s *Store) write(ctx context.Context, fn func(tx conn) error) error {
	timer := time.NewTimer(s.lockTimeout)
	defer timer.Stop()
	select {
	case s.writer <- struct{}{}:
	case <-timer.C:
		return fmt.Errorf("%w: waited %v for this process's other write transactions", store.ErrBusy, s.lockTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(conn{c: s.stmts, tx: tx}); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, errNoop) {
			return nil
		}
		return err
	}
	return tx.Commit()
}

// wrap adds the operation's context and turns driver codes into sentinels.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, classify(err))
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

// classify is idempotent, so an inner step may classify early for a clearer
// message.
func classify(err error) error {
	if errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case codeBusy, codeLocked:
		return fmt.Errorf("%w: %w", store.ErrBusy, err)
	case codeConstraint:
		switch se.Code() {
		case codePrimaryKey, codeUnique:
			return fmt.Errorf("%w: %w", store.ErrExists, err)
		case codeForeignKey:
			return fmt.Errorf("%w: %w", store.ErrNotFound, err)
		}
	}
	return err
}

// Times are Unix nanoseconds; 0 stands for the zero time, whose UnixNano is
// undefined.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func newID(id string) string {
	if id == "" {
		return uuid.NewString()
	}
	return id
}

// execOne runs a statement that must touch one row; none is missing.
func execOne(ctx context.Context, tx conn, missing error, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return missing
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

// collect reads every row with scan.
func collect[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
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
