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
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

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
	*sqlstore.Core // wallets, keys, principals, trusts, tools, servers, permits, notes, dispatch log
	db             *sql.DB
	// writer admits one write transaction of this process at a time. SQLite
	// admits one writer per file anyway; without this, this process's own
	// writers would contend through busy_timeout, which polls with sleeps of
	// up to 100 ms instead of queueing, and a burst of first calls would pay
	// those sleeps as its tail latency. Other processes on the same file are
	// still kept out by SQLite's lock and busy_timeout.
	writer      chan struct{}
	lockTimeout time.Duration
	stmts       *stmtCache

	mu      sync.Mutex
	pending []*writeReq // writes waiting for the writer (see write)

	ckpt *checkpointer
	// Touched only by the writer's holder (see committed).
	sinceFull            int // writes committed since a held checkpoint copied the whole WAL
	kickEvery, fullEvery int
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.DebitAppender   = (*Store)(nil)
	_ store.RefundAppender  = (*Store)(nil)
	_ store.AnyLockReleaser = (*Store)(nil)
	_ store.AnyRecordPurger = (*Store)(nil)
)

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
	// No automatic checkpoint: it runs in the connection that has just
	// committed, while this process's writer is still held, and under NORMAL
	// its fsync flushes every WAL page written since the last one. The
	// checkpointer runs them instead.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	dsn := path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
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
	ck, err := startCheckpointer(dsn)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{db: db, writer: make(chan struct{}, 1), lockTimeout: timeout, stmts: newStmtCache(db), ckpt: ck,
		kickEvery: kickEvery, fullEvery: fullEvery}
	s.Core = sqlstore.New(dialect, coreDB{s: s, read: connQuerier{s.read()}})
	return s, nil
}

// maxConns bounds the pool: one writer at a time, the rest readers (WAL lets
// them read beside it).
const maxConns = 16

// read runs statements on the pool, outside any transaction.
func (s *Store) read() conn { return conn{c: s.stmts} }

// Close closes the database. The last connection to close checkpoints the
// whole WAL into the database file, as SQLite does on every close.
func (s *Store) Close() error {
	cerr := s.ckpt.close()
	s.stmts.close()
	if err := errors.Join(cerr, s.db.Close()); err != nil {
		return fmt.Errorf("close sqlite: %w", err)
	}
	return nil
}

// Migrate applies the migrations not yet recorded. Concurrent callers
// (other processes included) serialise on the immediate transaction.
func (s *Store) Migrate(ctx context.Context) error {
	err := s.write(ctx, func(tx conn) error {
		return dialect.Migrate(ctx, connQuerier{tx}, func(ctx context.Context, body string) error {
			// A script of many statements, run once: not cached.
			_, err := tx.tx.ExecContext(ctx, body)
			return err
		})
	})
	return wrap("migrate", err)
}

// maxBatch bounds how many queued writes one transaction carries.
const maxBatch = 64

// writeReq is one write waiting for, or run by, the writer.
type writeReq struct {
	ctx      context.Context
	fn       func(tx conn) error
	deadline time.Time  // not started by then: store.ErrBusy
	done     chan error // buffered; the outcome once committed or refused
	taken    bool       // guarded by Store.mu: a writer has it
	// alone: fn may stall inside its transaction (a hook that can pause), so
	// it runs in a batch of its own and no other write waits on it past its
	// lock timeout.
	alone bool
}

// write runs fn in an immediate transaction, after this process's earlier
// writes; fn's writes are committed when write returns nil. A write not
// started within the lock timeout is store.ErrBusy, as a wait that long for
// another process's write lock is.
//
// Group commit: whoever holds the writer runs every write queued by then in
// one transaction, each under its own savepoint (a failing fn is rolled
// back alone), and commits once. BEGIN and COMMIT (the WAL frames and their
// checksums) are a large part of a short write, so concurrent first calls
// share them instead of paying one each. The writes of a batch run in queue
// order and see each other's effects, exactly as the same writes one
// transaction after another would.
func (s *Store) write(ctx context.Context, fn func(tx conn) error) error {
	return s.enqueue(&writeReq{ctx: ctx, fn: fn})
}

// writeAlone is write for a fn that may stall inside its transaction.
func (s *Store) writeAlone(ctx context.Context, fn func(tx conn) error) error {
	return s.enqueue(&writeReq{ctx: ctx, fn: fn, alone: true})
}

func (s *Store) enqueue(r *writeReq) error {
	ctx := r.ctx
	r.deadline, r.done = time.Now().Add(s.lockTimeout), make(chan error, 1)
	s.mu.Lock()
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	timer := time.NewTimer(s.lockTimeout)
	defer timer.Stop()
	select {
	case s.writer <- struct{}{}:
		s.runUntilTaken(r)
		<-s.writer
		return <-r.done // run by this holder's batches or by an earlier holder
	case err := <-r.done:
		return err
	case <-timer.C:
	case <-ctx.Done():
	}
	// Gave up waiting: withdraw the write unless a writer already took it,
	// in which case its outcome (ErrBusy if it had not started in time)
	// decides.
	s.mu.Lock()
	taken := r.taken
	if !taken {
		s.pending = slices.DeleteFunc(s.pending, func(p *writeReq) bool { return p == r })
	}
	s.mu.Unlock()
	if taken {
		return <-r.done
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.busy()
}

func (s *Store) busy() error {
	return fmt.Errorf("%w: waited %v for this process's other write transactions", store.ErrBusy, s.lockTimeout)
}

// runUntilTaken runs queued writes, oldest first, in batches of at most
// maxBatch, while this goroutine holds the writer, until r has been run.
// Writes queued after r are left to the next holder: every queued write's
// caller waits for the writer too, so one of them takes it, and no holder
// serves a steady stream of others while its own caller waits.
func (s *Store) runUntilTaken(r *writeReq) {
	for {
		s.mu.Lock()
		if r.taken {
			s.mu.Unlock()
			return
		}
		n := min(len(s.pending), maxBatch)
		if i := slices.IndexFunc(s.pending[:n], func(q *writeReq) bool { return q.alone }); i == 0 {
			n = 1
		} else if i > 0 {
			n = i
		}
		batch := slices.Clone(s.pending[:n])
		s.pending = slices.Delete(s.pending, 0, n)
		for _, q := range batch {
			q.taken = true
		}
		s.mu.Unlock()
		if n == 0 {
			return
		}
		s.runBatch(batch)
	}
}

// runBatch runs batch in one transaction and answers every write in it.
func (s *Store) runBatch(batch []*writeReq) {
	errs := make([]error, len(batch))
	ran := make([]bool, len(batch)) // fn's writes are in the transaction
	answer := func(err error) {
		for i, r := range batch {
			if ran[i] && errs[i] == nil {
				errs[i] = err // its writes were not committed
			}
			r.done <- errs[i]
		}
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		answer(nil)
		return
	}
	single := len(batch) == 1
	for i, r := range batch {
		switch {
		case time.Now().After(r.deadline):
			errs[i] = s.busy()
			continue
		case r.ctx.Err() != nil:
			errs[i] = r.ctx.Err()
			continue
		}
		c := conn{c: s.stmts, tx: tx, run: context.WithoutCancel(r.ctx)}
		if !single {
			if _, err := c.ExecContext(r.ctx, `SAVEPOINT w`); err != nil {
				errs[i] = err
				continue
			}
		}
		err := r.fn(c)
		if err == nil {
			ran[i] = true
			if single {
				continue
			}
			if _, err := c.ExecContext(r.ctx, `RELEASE w`); err != nil {
				_ = tx.Rollback()
				answer(fmt.Errorf("release savepoint: %w", err))
				return
			}
			continue
		}
		if !errors.Is(err, sqlstore.ErrNoop) {
			errs[i] = err
		}
		if single {
			_ = tx.Rollback()
			answer(nil)
			return
		}
		// Undo this write alone; its savepoint stays open until released.
		_, rerr := c.ExecContext(r.ctx, `ROLLBACK TO w`)
		if rerr == nil {
			_, rerr = c.ExecContext(r.ctx, `RELEASE w`)
		}
		if rerr != nil {
			_ = tx.Rollback()
			for j := i + 1; j < len(batch); j++ {
				errs[j] = fmt.Errorf("write batch aborted: %w", rerr)
			}
			answer(fmt.Errorf("write batch aborted after a failed rollback: %w", rerr))
			return
		}
	}
	err = tx.Commit()
	answer(err)
	if err == nil {
		s.committed(len(batch))
	}
}
