package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
)

func testMigrate(t *testing.T, s store.Store) {
	// Several processes starting at once all migrate the same empty database.
	others := make([]store.Store, 4)
	for i := range others {
		others[i] = reopen(t, s, 0)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(others)+1)
	start := make(chan struct{})
	for i, o := range append(others, s) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = o.Migrate(ctx(t))
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent migrate %d: %v", i, err)
		}
	}
	must(t, s.Migrate(ctx(t)))
	fx := newFixture(t, s, 1)
	got, err := others[0].Wallet(ctx(t), fx.wallet.ID)
	must(t, err)
	diff(t, "wallet through another handle", fx.wallet, got)
}

func testWallets(t *testing.T, s store.Store) {
	w := store.Wallet{ID: id(), Balance: 42, CreatedAt: t0}
	must(t, s.CreateWallet(ctx(t), w))
	got, err := s.Wallet(ctx(t), w.ID)
	must(t, err)
	diff(t, "wallet", w, got)
	wantErr(t, "create duplicate wallet", s.CreateWallet(ctx(t), w), store.ErrExists)
	_, err = s.Wallet(ctx(t), id())
	wantErr(t, "missing wallet", err, store.ErrNotFound)
}

func testCreditLedger(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 10)
	empty, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	diff(t, "empty ledger", []store.LedgerEntry(nil), empty)

	credit := func(amount int64, at time.Time) store.LedgerEntry {
		return store.LedgerEntry{ID: id(), WalletID: fx.wallet.ID, Kind: store.EntryCredit, Amount: amount, At: at}
	}
	late, first, second := credit(1, t0.Add(2*time.Nanosecond)), credit(2, t0.Add(time.Nanosecond)), credit(4, t0.Add(time.Nanosecond))
	for _, e := range []store.LedgerEntry{late, first, second} {
		must(t, s.Credit(ctx(t), e))
	}
	if got := balance(t, s, fx.wallet.ID); got != 17 {
		t.Errorf("balance = %d, want 17", got)
	}
	got, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	diff(t, "ledger (by time, then insertion)", []store.LedgerEntry{first, second, late}, got)

	missing := credit(1, t0)
	missing.WalletID = id()
	wantErr(t, "credit missing wallet", s.Credit(ctx(t), missing), store.ErrNotFound)
	_, err = s.Ledger(ctx(t), missing.WalletID)
	wantErr(t, "ledger of missing wallet", err, store.ErrNotFound)
}

func testAppendDebit(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 3)
	rec, _ := fx.reserve(t, s)
	e := fx.debit(rec, 5)
	// No condition: not the owner's charge, more than the balance.
	a := optional[store.DebitAppender](t, s)
	must(t, a.AppendDebit(ctx(t), e))
	if got := balance(t, s, fx.wallet.ID); got != -2 {
		t.Errorf("balance = %d, want -2", got)
	}
	got, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	diff(t, "ledger", []store.LedgerEntry{e}, got)
	e.ID, e.WalletID = id(), id()
	wantErr(t, "append debit to missing wallet", a.AppendDebit(ctx(t), e), store.ErrNotFound)
}

// testAppendRefund: a refund with no condition, as the uncertain-refunded
// bug writes one: of a record still in progress, twice over.
func testAppendRefund(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 3)
	rec, _ := fx.reserve(t, s)
	first := fx.debit(rec, 2)
	first.Kind = store.EntryRefund
	again := first
	again.ID = id()
	a := optional[store.RefundAppender](t, s)
	for _, e := range []store.LedgerEntry{first, again} {
		must(t, a.AppendRefund(ctx(t), e))
	}
	if got := balance(t, s, fx.wallet.ID); got != 7 {
		t.Errorf("balance after two refunds of 2 = %d, want 7", got)
	}
	entries, err := s.Ledger(ctx(t), fx.wallet.ID)
	must(t, err)
	diff(t, "ledger", []store.LedgerEntry{first, again}, entries)
	again.ID, again.WalletID = id(), id()
	wantErr(t, "append refund to missing wallet", a.AppendRefund(ctx(t), again), store.ErrNotFound)
}

func testAPIKeys(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	got, err := s.APIKey(ctx(t), fx.key.ID)
	must(t, err)
	fx.key.ToolsVersion = got.ToolsVersion // read, not written (testToolsVersion)
	diff(t, "api key", fx.key, got)
	wantErr(t, "duplicate api key", s.CreateAPIKey(ctx(t), fx.key), store.ErrExists)
	_, err = s.APIKey(ctx(t), id())
	wantErr(t, "missing api key", err, store.ErrNotFound)
	orphan := store.APIKey{ID: id(), WalletID: id(), SecretHash: []byte{1, 2, 3}, CreatedAt: t0}
	wantErr(t, "api key of missing wallet", s.CreateAPIKey(ctx(t), orphan), store.ErrNotFound)

	must(t, s.RevokeAPIKey(ctx(t), fx.key.ID))
	want := fx.key
	want.Revoked = true
	got, err = s.APIKey(ctx(t), fx.key.ID)
	must(t, err)
	diff(t, "revoked api key", want, got)
	must(t, s.RevokeAPIKey(ctx(t), fx.key.ID)) // revoking twice is no error: a retried revocation
	got, err = s.APIKey(ctx(t), fx.key.ID)
	must(t, err)
	diff(t, "api key revoked twice", want, got)
	// A revoked key keeps its id: it cannot be issued again, revived or not.
	wantErr(t, "re-create revoked api key", s.CreateAPIKey(ctx(t), fx.key), store.ErrExists)
	wantErr(t, "revoke missing api key", s.RevokeAPIKey(ctx(t), id()), store.ErrNotFound)
}

func testPrincipals(t *testing.T, s store.Store) {
	p := store.Principal{ID: id(), Provider: "okta", Issuer: "https://idp.example.com", Subject: id()}
	must(t, s.PutPrincipal(ctx(t), p))
	got, err := s.Principal(ctx(t), p.Provider, p.Issuer, p.Subject)
	must(t, err)
	diff(t, "principal", p, got)

	p.Tools = []string{"partner.echo", "partner.notes.write"}
	must(t, s.PutPrincipal(ctx(t), p))
	got, err = s.PrincipalByID(ctx(t), p.ID)
	must(t, err)
	diff(t, "replaced principal", p, got)

	twin := p
	twin.ID = id()
	wantErr(t, "second principal for one subject", s.PutPrincipal(ctx(t), twin), store.ErrExists)

	must(t, s.RevokePrincipal(ctx(t), p.ID))
	p.Revoked = true
	got, err = s.Principal(ctx(t), p.Provider, p.Issuer, p.Subject)
	must(t, err)
	diff(t, "revoked principal", p, got)

	wantErr(t, "revoke missing principal", s.RevokePrincipal(ctx(t), id()), store.ErrNotFound)
	_, err = s.PrincipalByID(ctx(t), id())
	wantErr(t, "missing principal by id", err, store.ErrNotFound)
	_, err = s.Principal(ctx(t), p.Provider, p.Issuer, id())
	wantErr(t, "missing principal", err, store.ErrNotFound)
}

func testTrusts(t *testing.T, s store.Store) {
	got, err := s.Trusts(ctx(t))
	must(t, err)
	diff(t, "no trusts", []store.Trust(nil), got)
	b1 := store.Trust{Provider: "okta", Issuer: "https://a.example.com", JWKSURL: "https://a.example.com/jwks", Audience: "mcp"}
	a2 := store.Trust{Provider: "entra", Issuer: "https://b.example.com", JWKSURL: "https://b.example.com/jwks", Audience: "mcp"}
	a1 := store.Trust{Provider: "entra", Issuer: "https://a.example.com", JWKSURL: "https://a.example.com/old", Audience: "old"}
	for _, tr := range []store.Trust{b1, a2, a1} {
		must(t, s.PutTrust(ctx(t), tr))
	}
	a1.JWKSURL, a1.Audience = "https://a.example.com/keys", "mcp"
	must(t, s.PutTrust(ctx(t), a1))
	got, err = s.Trusts(ctx(t))
	must(t, err)
	diff(t, "trusts (by provider, issuer)", []store.Trust{a1, a2, b1}, got)
}

func testTools(t *testing.T, s store.Store) {
	echo := store.Tool{Name: "partner.echo", Description: "echoes", Price: 1}
	count := store.Tool{Name: "partner.notes.count", Description: "counts", Price: 1, ReadOnly: true}
	up := store.Tool{Name: "upstream.deploy", Description: "deploys", Price: 50, Approval: true,
		UpstreamURL: "http://127.0.0.1:9/mcp", UpstreamTool: "deploy",
		Overrides: json.RawMessage(`{"title":"Deploy","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}}`)}
	for _, tool := range []store.Tool{up, echo, count} {
		must(t, s.PutTool(ctx(t), tool))
	}
	must(t, s.RemoveTool(ctx(t), count.Name))
	got, err := s.Tools(ctx(t))
	must(t, err)
	diff(t, "tools (not removed, by name)", []store.Tool{echo, up}, got)

	removed, err := s.Tool(ctx(t), count.Name)
	must(t, err)
	count.Removed = true
	diff(t, "removed tool", count, removed)

	count.Price = 2 // Removed is still set: a put un-removes whatever it says
	must(t, s.PutTool(ctx(t), count))
	count.Removed = false
	got, err = s.Tools(ctx(t))
	must(t, err)
	diff(t, "tools after re-put", []store.Tool{echo, count, up}, got)

	wantErr(t, "remove missing tool", s.RemoveTool(ctx(t), "no.such.tool"), store.ErrNotFound)
	_, err = s.Tool(ctx(t), "no.such.tool")
	wantErr(t, "missing tool", err, store.ErrNotFound)
	testToolsVersion(t, s)
}

// testToolsVersion: every tool write raises the registry's version, read
// with a tool and with an API key alike; a failed write and every other
// write leave it.
func testToolsVersion(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	version := func(step string) int64 {
		t.Helper()
		tool, v, err := s.VersionedTool(ctx(t), fx.tool.Name)
		must(t, err)
		k, err := s.APIKey(ctx(t), fx.key.ID)
		must(t, err)
		if k.ToolsVersion != v {
			t.Fatalf("%s: version %d read with the API key, %d with the tool", step, k.ToolsVersion, v)
		}
		if plain, err := s.Tool(ctx(t), fx.tool.Name); err != nil || plain.Price != tool.Price || plain.Removed != tool.Removed {
			t.Fatalf("%s: VersionedTool read %+v, Tool %+v (%v)", step, tool, plain, err)
		}
		return v
	}
	v := version("start")
	if v <= 0 {
		t.Fatalf("start: version %d, want a positive one", v)
	}
	steps := []struct {
		name   string
		write  func() error
		raised bool
	}{
		{"price changed", func() error { t2 := fx.tool; t2.Price++; return s.PutTool(ctx(t), t2) }, true},
		{"another tool put", func() error { return s.PutTool(ctx(t), store.Tool{Name: "other." + id(), Price: 1}) }, true},
		{"removed", func() error { return s.RemoveTool(ctx(t), fx.tool.Name) }, true},
		{"put back", func() error { return s.PutTool(ctx(t), fx.tool) }, true},
		{"a missing tool's removal fails", func() error {
			if err := s.RemoveTool(ctx(t), "no.such.tool"); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("remove missing tool: %v, want ErrNotFound", err)
			}
			return nil
		}, false},
		{"a wallet credited", func() error {
			return s.Credit(ctx(t), store.LedgerEntry{WalletID: fx.wallet.ID, Amount: 1, At: t0})
		}, false},
	}
	for _, st := range steps {
		must(t, st.write())
		got := version(st.name)
		if raised := got > v; raised != st.raised || got < v {
			t.Errorf("%s: version %d after %d, want raised %v", st.name, got, v, st.raised)
		}
		v = got
	}
}

func testServers(t *testing.T, s store.Store) {
	b := store.Server{Name: "b", URL: "http://127.0.0.1:9/mcp", Price: 2}
	a := store.Server{Name: "a", URL: "http://127.0.0.1:8/mcp", Prefix: "ev.", Price: 1,
		Prices: map[string]int64{"deploy": 50}, ReadOnly: []string{"status"}}
	must(t, s.PutServer(ctx(t), b))
	must(t, s.PutServer(ctx(t), a))
	got, err := s.Servers(ctx(t))
	must(t, err)
	diff(t, "servers (by name)", []store.Server{a, b}, got)

	b.URL, b.Prices = "http://127.0.0.1:7/mcp", map[string]int64{"x": 0}
	must(t, s.PutServer(ctx(t), b))
	must(t, s.RemoveServer(ctx(t), a.Name))
	got, err = s.Servers(ctx(t))
	must(t, err)
	diff(t, "servers after a replace and a removal", []store.Server{b}, got)
	wantErr(t, "remove missing server", s.RemoveServer(ctx(t), a.Name), store.ErrNotFound)
}

func testPermits(t *testing.T, s store.Store) {
	fx := newFixture(t, s, 0)
	p := store.Permit{ID: id(), WalletID: fx.wallet.ID, APIKeyID: fx.key.ID, Tool: fx.tool.Name,
		Budget: 10, Spent: 3, ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}
	must(t, s.CreatePermit(ctx(t), p))
	got, err := s.Permit(ctx(t), p.ID)
	must(t, err)
	diff(t, "permit", p, got)
	wantErr(t, "duplicate permit", s.CreatePermit(ctx(t), p), store.ErrExists)
	_, err = s.Permit(ctx(t), id())
	wantErr(t, "missing permit", err, store.ErrNotFound)
	p.ID, p.WalletID = id(), id()
	wantErr(t, "permit of missing wallet", s.CreatePermit(ctx(t), p), store.ErrNotFound)

	// The ends of store.TimeInRange are kept as they are.
	for _, at := range []time.Time{store.MaxTime, store.MinTime} {
		edge := store.Permit{ID: id(), WalletID: fx.wallet.ID, APIKeyID: fx.key.ID, Tool: fx.tool.Name,
			Budget: 1, ExpiresAt: at, CreatedAt: t0}
		must(t, s.CreatePermit(ctx(t), edge))
		got, err := s.Permit(ctx(t), edge.ID)
		must(t, err)
		diff(t, "permit expiring at "+at.Format(time.RFC3339Nano), edge, got)
	}
}

func testNotes(t *testing.T, s store.Store) {
	a, b := newFixture(t, s, 0), newFixture(t, s, 0)
	var last int64
	for i, w := range []string{a.wallet.ID, b.wallet.ID, a.wallet.ID} {
		n, err := s.AddNote(ctx(t), w, "note", t0.Add(time.Duration(i)))
		must(t, err)
		if n <= last {
			t.Errorf("note id %d after %d, want growing ids", n, last)
		}
		last = n
	}
	for w, want := range map[string]int64{a.wallet.ID: 2, b.wallet.ID: 1, id(): 0} {
		got, err := s.CountNotes(ctx(t), w)
		must(t, err)
		if got != want {
			t.Errorf("CountNotes(%s) = %d, want %d", w, got, want)
		}
	}
}

func testDispatches(t *testing.T, s store.Store) {
	none, err := s.Dispatches(ctx(t), store.DispatchFilter{})
	must(t, err)
	diff(t, "no dispatches", []store.Dispatch(nil), none)
	w1, w2 := id(), id()
	d := func(tool, wallet string, at time.Time) store.Dispatch {
		return store.Dispatch{ID: id(), Tool: tool, RecordKey: id(), Fingerprint: id(), WalletID: wallet, At: at}
	}
	late := d("partner.echo", w1, t0.Add(time.Second))
	first := d("partner.notes.write", w1, t0)
	second := d("partner.echo", w2, t0)
	for _, x := range []store.Dispatch{late, first, second} {
		must(t, s.LogDispatch(ctx(t), x))
	}
	for _, tc := range []struct {
		name string
		f    store.DispatchFilter
		want []store.Dispatch
	}{
		{"all", store.DispatchFilter{}, []store.Dispatch{first, second, late}},
		{"tool", store.DispatchFilter{Tool: "partner.echo"}, []store.Dispatch{second, late}},
		{"wallet", store.DispatchFilter{WalletID: w1}, []store.Dispatch{first, late}},
		{"tool and wallet", store.DispatchFilter{Tool: "partner.echo", WalletID: w1}, []store.Dispatch{late}},
		{"no match", store.DispatchFilter{WalletID: id()}, nil},
	} {
		got, err := s.Dispatches(ctx(t), tc.f)
		must(t, err)
		diff(t, "dispatches "+tc.name, tc.want, got)
	}
}
