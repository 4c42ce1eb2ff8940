package storetest

import (
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

const stale = 2 * time.Minute

func testAcquireLock(t *testing.T, s store.Store) {
	identity := id() + "|partner.notes.write|" + id()
	first, second := id(), id()
	taken := t0.Add(stale)

	// Steps run in order on one lock row; each names what the row is after it.
	steps := []struct {
		name    string
		owner   string
		now     time.Time
		wantErr error
		want    store.Lock // the row afterwards; zero: no row
	}{
		{"absent: inserted with fence 1", first, t0, nil,
			store.Lock{Identity: identity, Owner: first, Fence: 1, AcquiredAt: t0}},
		{"fresh: held", second, t0.Add(stale - time.Nanosecond), store.ErrLockHeld,
			store.Lock{Identity: identity, Owner: first, Fence: 1, AcquiredAt: t0}},
		{"fresh, same owner: held", first, t0.Add(time.Second), store.ErrLockHeld,
			store.Lock{Identity: identity, Owner: first, Fence: 1, AcquiredAt: t0}},
		{"stale at exactly now-staleAfter: taken over", second, taken, nil,
			store.Lock{Identity: identity, Owner: second, Fence: 2, AcquiredAt: taken}},
		{"taken over lock is fresh again", first, taken.Add(stale - time.Nanosecond), store.ErrLockHeld,
			store.Lock{Identity: identity, Owner: second, Fence: 2, AcquiredAt: taken}},
		{"stale again: fence grows", first, taken.Add(time.Hour), nil,
			store.Lock{Identity: identity, Owner: first, Fence: 3, AcquiredAt: taken.Add(time.Hour)}},
	}
	for _, st := range steps {
		got, err := s.AcquireLock(ctx(t), identity, st.owner, st.now, stale)
		wantErr(t, st.name, err, st.wantErr)
		if st.wantErr == nil {
			diff(t, st.name+": returned lock", st.want, got)
		}
		row, err := s.LockOf(ctx(t), identity)
		must(t, err)
		diff(t, st.name+": lock row", st.want, row)
	}

	// Release is pinned to the holder.
	ok, err := s.ReleaseLock(ctx(t), identity, second)
	must(t, err)
	if ok {
		t.Errorf("release by a former holder = true, want false")
	}
	if _, err := s.LockOf(ctx(t), identity); err != nil {
		t.Errorf("lock row after a refused release: %v", err)
	}
	ok, err = s.ReleaseLock(ctx(t), identity, first)
	must(t, err)
	if !ok {
		t.Errorf("release by the holder = false, want true")
	}
	_, err = s.LockOf(ctx(t), identity)
	wantErr(t, "lock after release", err, store.ErrNotFound)
	ok, err = s.ReleaseLock(ctx(t), identity, first)
	must(t, err)
	if ok {
		t.Errorf("release of an absent lock = true, want false")
	}

	_, err = s.AcquireLock(ctx(t), identity, second, t0, stale)
	must(t, err)
	releaser := optional[store.AnyLockReleaser](t, s)
	must(t, releaser.ReleaseLockAny(ctx(t), identity))
	_, err = s.LockOf(ctx(t), identity)
	wantErr(t, "lock after release any", err, store.ErrNotFound)
	must(t, releaser.ReleaseLockAny(ctx(t), identity))
}

func testLocksByPrefix(t *testing.T, s store.Store) {
	w, other := id(), id()
	identities := []string{
		w + "|partner.echo|b", w + "|partner.notes.write|a", w + "|partner.echo|a",
		w + "%|partner.echo|a", // % and _ are not wildcards
		other + "|partner.echo|a",
	}
	locks := map[string]store.Lock{}
	for i, ident := range identities {
		l, err := s.AcquireLock(ctx(t), ident, id(), t0.Add(time.Duration(i)), stale)
		must(t, err)
		locks[ident] = l
	}
	pick := func(idents ...string) []store.Lock {
		var out []store.Lock
		for _, i := range idents {
			out = append(out, locks[i])
		}
		return out
	}
	for _, tc := range []struct {
		prefix string
		want   []store.Lock
	}{
		{w + "|partner.echo|", pick(w+"|partner.echo|a", w+"|partner.echo|b")},
		{w + "|", pick(w+"|partner.echo|a", w+"|partner.echo|b", w+"|partner.notes.write|a")},
		{w + "%", pick(w + "%|partner.echo|a")},
		{w + "_", nil},
		{id(), nil},
	} {
		got, err := s.Locks(ctx(t), tc.prefix)
		must(t, err)
		diff(t, "locks "+tc.prefix, tc.want, got)
	}
	all, err := s.Locks(ctx(t), "")
	must(t, err)
	if len(all) != len(identities) {
		t.Errorf("Locks(\"\") = %d rows, want %d", len(all), len(identities))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Identity >= all[i].Identity {
			t.Errorf("Locks(\"\") not ordered by identity: %q before %q", all[i-1].Identity, all[i].Identity)
		}
	}
}
