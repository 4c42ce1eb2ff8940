package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

// ReserveSlot is store.Store's ReserveSlot in two round trips on one
// connection: a batch that begins the transaction, inserts the lock row and
// reads the slots; then, Choose having chosen, a batch of the reservation
// (ReserveNew's statement, charged), the lock row's deletion and the
// commit, so the wallet the reservation locks is held only while the
// server runs the rest of that batch. A twin's insert of the lock row waits
// for this transaction, and reads the slot it made.
//
// It decides only the usual case. A lock row already there (held, or stale
// and to be taken over), or a chosen key that has a record, or a refused
// charge, ends it with nothing written, undecided: the core's transaction
// form then decides. A joined slot is decided, the lock row rolled back.
func (d coreDB) ReserveSlot(ctx context.Context, r store.SlotRequest,
	ready func(store.ReserveRequest) (sqlstore.Reservation, error)) (rec store.Record, created, decided bool, err error) {
	conn, err := d.s.pool.Acquire(ctx)
	if err != nil {
		return store.Record{}, false, false, err
	}
	defer conn.Release()
	defer func() {
		// Whatever is left open is rolled back; a connection still in a
		// transaction after that is closed by the pool on release.
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "rollback")
		}
	}()

	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(sqlstore.InsertLock, r.Identity, r.Owner, nanos(r.Now))
	b.Queue(sqlstore.SlotsQuery, sqlstore.SlotsArgs(r.Identity, r.Since)...)
	locked, slots, err := lockAndRead(conn.SendBatch(ctx, b))
	if err != nil || !locked {
		return store.Record{}, false, false, err
	}
	join, req := r.Choose(slots)
	if join != nil {
		return *join, false, true, nil
	}
	v, err := ready(req)
	if err != nil {
		return store.Record{}, false, false, err
	}
	q := reserveNew(v.Record, v.Permit, nil, false, v.Charge)
	if q == nil {
		return store.Record{}, false, false, nil
	}
	b = &pgx.Batch{}
	b.Queue(q.text.String(), q.args...)
	// Unconditional: a reservation that wrote nothing commits nothing.
	b.Queue(sqlstore.DeleteLock, r.Identity, r.Owner)
	b.Queue("commit")
	n, err := reserveAndCommit(conn.SendBatch(ctx, b))
	if refused(err) || err == nil && n != 1 {
		return store.Record{}, false, false, nil
	}
	if err != nil {
		return store.Record{}, false, false, err
	}
	return v.Record, true, true, nil
}

// lockAndRead reads the first batch's results: whether the lock row went
// in, and the slots.
func lockAndRead(br pgx.BatchResults) (locked bool, slots []store.Record, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return false, nil, fmt.Errorf("begin: %w", err)
	}
	tag, err := br.Exec()
	if err != nil {
		return false, nil, fmt.Errorf("acquire lock: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return false, nil, fmt.Errorf("read slots: %w", err)
	}
	slots, err = sqlstore.ScanRecords(rows)
	if err != nil {
		return false, nil, fmt.Errorf("read slots: %w", err)
	}
	return tag.RowsAffected() == 1, slots, nil
}

// reserveAndCommit reads the second batch's results: how many records the
// reservation created, once committed.
func reserveAndCommit(br pgx.BatchResults) (n int, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if err := br.QueryRow().Scan(&n); err != nil {
		return 0, err
	}
	if _, err := br.Exec(); err != nil {
		return 0, fmt.Errorf("release lock: %w", err)
	}
	tag, err := br.Exec()
	if err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		return 0, fmt.Errorf("commit: %s", tag)
	}
	return n, nil
}
