package control

import (
	"context"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reports"
)

type rig struct {
	f   *fake
	c   *Client
	ctx context.Context
	mu  sync.Mutex
	ex  []reports.Exchange
}

func newRig(t *testing.T) *rig {
	t.Helper()
	f := newFake("tok")
	ts := httptest.NewServer(f.handler())
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	r := &rig{f: f, ctx: ctx}
	r.c = &Client{BaseURL: ts.URL, Token: "tok", Record: func(e reports.Exchange) { r.mu.Lock(); r.ex = append(r.ex, e); r.mu.Unlock() }}
	return r
}

// peek reads the fake's state under its lock.
func peek[T any](r *rig, fn func(f *fake) T) T {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return fn(r.f)
}

func TestFixturesAndEffects(t *testing.T) {
	r := newRig(t)
	ctx, c := r.ctx, r.c

	caps, err := c.Capabilities(ctx)
	if err != nil || caps.ControlAPI != "mcpconform/1" || !caps.Has(CapClock) || caps.Has(CapLocks) || caps.Settings.LockTimeout != Duration(time.Second) {
		t.Fatalf("Capabilities = %+v, %v", caps, err)
	}
	w, err := c.CreateWallet(ctx, 100)
	if err != nil || w.Balance != 100 || w.WalletID == "" {
		t.Fatalf("CreateWallet = %+v, %v", w, err)
	}
	if bal, err := c.Credit(ctx, w.WalletID, 50); err != nil || bal != 150 {
		t.Fatalf("Credit = %d, %v", bal, err)
	}
	k, err := c.CreateKey(ctx, w.WalletID)
	if err != nil || !strings.HasPrefix(k.APIKey, "mcpk_") || peek(r, func(f *fake) string { return f.keys[k.KeyID] }) != w.WalletID {
		t.Fatalf("CreateKey = %+v, %v", k, err)
	}
	tr := Trust{Provider: "harness", Issuer: "http://127.0.0.1:1", JWKSURL: "http://127.0.0.1:1/jwks.json", Audience: "mcpconform"}
	if err := c.Trust(ctx, tr); err != nil || peek(r, func(f *fake) bool { return len(f.trust) != 1 || f.trust[0] != tr }) {
		t.Fatalf("Trust: %v", err)
	}
	pid, err := c.CreatePrincipal(ctx, Principal{Provider: "harness", Issuer: tr.Issuer, Subject: "alice"})
	if err != nil || peek(r, func(f *fake) string { return f.principals[pid].Subject }) != "alice" {
		t.Fatalf("CreatePrincipal = %q, %v", pid, err)
	}
	if err := c.Revoke(ctx, pid); err != nil || !peek(r, func(f *fake) bool { return f.revoked[pid] }) {
		t.Fatalf("Revoke: %v", err)
	}
	tool := Tool{Name: "probe.write.1", Price: Ptr[int64](3), UpstreamURL: "http://127.0.0.1:9/mcp", UpstreamTool: "probe.write"}
	if name, err := c.CreateTool(ctx, tool); err != nil || name != tool.Name || !reflect.DeepEqual(peek(r, func(f *fake) Tool { return f.tools[name] }), tool) {
		t.Fatalf("CreateTool = %q, %v", name, err)
	}
	if err := c.DeleteTool(ctx, tool.Name); err != nil || peek(r, func(f *fake) int { return len(f.tools) }) != 0 {
		t.Fatalf("DeleteTool: %v", err)
	}
	p, err := c.CreatePermit(ctx, PermitRequest{WalletID: w.WalletID, KeyID: k.KeyID, Tool: tool.Name, Budget: Ptr[int64](3), TTL: "120s"})
	if err != nil || p.PermitID == "" || p.ExpiresAt.Sub(peek(r, func(f *fake) time.Time { return f.clock.Now })) != 120*time.Second {
		t.Fatalf("CreatePermit = %+v, %v", p, err)
	}
	snap, err := c.Snapshot(ctx, w.WalletID)
	if err != nil || snap.Balance != 150 || len(snap.Entries) != 1 || snap.Entries[0].Kind != "credit" || snap.Entries[0].Amount != 50 {
		t.Fatalf("Snapshot = %+v, %v", snap, err)
	}
	ds, err := c.Dispatches(ctx, tool.Name, w.WalletID)
	if err != nil || len(ds) != 1 || ds[0].Tool != tool.Name || ds[0].WalletID != w.WalletID {
		t.Fatalf("Dispatches = %+v, %v", ds, err)
	}
	if _, err := c.Dispatches(ctx, "", w.WalletID); err != nil || peek(r, func(f *fake) string { return f.lastQuery }) != "wallet_id="+w.WalletID {
		t.Fatalf("empty filter sent or error: %v", err)
	}
	if ls, err := c.Locks(ctx, tool.Name, w.WalletID); err != nil || len(ls) != 1 || ls[0].Fence != 2 {
		t.Fatalf("Locks = %+v, %v", ls, err)
	}

	// Evidence: one exchange per call, the token hidden.
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ex) != 15 {
		t.Errorf("%d exchanges, want 15", len(r.ex))
	}
	for _, e := range r.ex {
		if e.RequestHeaders["Authorization"] != "Bearer ***" || e.Lane != "control" || e.Status == 0 {
			t.Errorf("exchange %s: %+v", e.Label, e.RequestHeaders)
		}
	}
	if e := r.ex[1]; e.Label != "control POST /wallets" || string(e.RequestBody) != `{"balance":100}` || e.Status != 201 {
		t.Errorf("wallet exchange %+v", e)
	}
}

func TestClockAndSettings(t *testing.T) {
	r := newRig(t)
	ctx, c := r.ctx, r.c
	at := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	if ck, err := c.SetClock(ctx, at); err != nil || !ck.Now.Equal(at) || !ck.Frozen {
		t.Fatalf("SetClock = %+v, %v", ck, err)
	}
	if ck, err := c.AdvanceClock(ctx, 130*time.Second); err != nil || !ck.Now.Equal(at.Add(130*time.Second)) {
		t.Fatalf("AdvanceClock = %+v, %v", ck, err)
	}
	if ck, err := c.Clock(ctx); err != nil || !ck.Now.Equal(at.Add(130*time.Second)) {
		t.Fatalf("Clock = %+v, %v", ck, err)
	}
	if err := c.ResetClock(ctx); err != nil || peek(r, func(f *fake) bool { return f.clock.Frozen }) {
		t.Fatalf("ResetClock: %v", err)
	}
	s, err := c.PutSettings(ctx, SettingsPatch{WindowSeconds: Ptr(0.0)})
	if err != nil || s.WindowSeconds != 0 || s.PermitTTLSeconds != 120 || s.EffectiveWindowSeconds != 0 {
		t.Fatalf("PutSettings = %+v, %v", s, err)
	}
	if err := c.ResetSettings(ctx); err != nil || peek(r, func(f *fake) float64 { return f.settings.WindowSeconds }) != 300 {
		t.Fatalf("ResetSettings: %v", err)
	}
}

func TestFaults(t *testing.T) {
	r := newRig(t)
	ctx, c := r.ctx, r.c
	id, err := c.ArmFault(ctx, Fault{Point: "fence.read", Action: "pause", Count: 1, Match: FaultMatch{Tool: "t"}})
	if err != nil || id == "" {
		t.Fatalf("ArmFault = %q, %v", id, err)
	}
	done := make(chan *FaultState, 1)
	go func() {
		st, err := c.AwaitFault(ctx, id, 2, 10*time.Second)
		if err != nil {
			t.Errorf("AwaitFault: %v", err)
		}
		done <- st
	}()
	r.f.arrive(id)
	r.f.arrive(id)
	if st := <-done; st == nil || st.Waiting != 2 || st.Hits != 2 {
		t.Fatalf("AwaitFault = %+v", st)
	}
	if st, err := c.FaultState(ctx, id); err != nil || st.Point != "fence.read" || st.Action != "pause" {
		t.Fatalf("FaultState = %+v, %v", st, err)
	}
	if st, err := c.ReleaseFault(ctx, id); err != nil || !st.Released {
		t.Fatalf("ReleaseFault = %+v, %v", st, err)
	}
	if err := c.ResetFaults(ctx); err != nil || peek(r, func(f *fake) int { return len(f.faults) }) != 0 {
		t.Fatalf("ResetFaults: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	r := newRig(t)
	ctx := r.ctx
	id, _ := r.c.ArmFault(ctx, Fault{Point: "dispatch.after", Action: "fail"})
	tests := []struct {
		name       string
		call       func(c *Client) error
		wrongToken bool
		status     int
		reason     string
	}{
		{"no token", func(c *Client) error { _, err := c.Capabilities(ctx); return err }, true, 401, "control_token_required"},
		{"unknown wallet", func(c *Client) error { _, err := c.Wallet(ctx, "w-none"); return err }, false, 404, "not_found"},
		{"credit unknown wallet", func(c *Client) error { _, err := c.Credit(ctx, "w-none", 1); return err }, false, 404, "not_found"},
		{"negative setting", func(c *Client) error {
			_, err := c.PutSettings(ctx, SettingsPatch{StaleLockSeconds: Ptr(-1.0)})
			return err
		}, false, 400, "invalid_setting"},
		{"unknown fault point", func(c *Client) error { _, err := c.ArmFault(ctx, Fault{Point: "nowhere", Action: "pause"}); return err }, false, 400, "unknown_fault_point"},
		{"await timeout", func(c *Client) error { _, err := c.AwaitFault(ctx, id, 1, 20*time.Millisecond); return err }, false, 408, "await_timeout"},
		{"delete unknown tool", func(c *Client) error { return c.DeleteTool(ctx, "nope") }, false, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *r.c
			if tt.wrongToken {
				c.Token = ""
			}
			err := tt.call(&c)
			if err == nil {
				t.Fatal("want a refusal")
			}
			if StatusOf(err) != tt.status || ReasonOf(err) != tt.reason {
				t.Fatalf("err %v: status %d reason %q", err, StatusOf(err), ReasonOf(err))
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("message %q lacks the reason", err)
			}
		})
	}
}

// TestOperations: the client lists uncertain operations and settles one;
// a second settlement is refused with the reason the contract names.
func TestOperations(t *testing.T) {
	r := newRig(t)
	ops, err := r.c.UncertainOperations(r.ctx)
	if err != nil || len(ops) != 1 || ops[0].Key != "op-1" || ops[0].Receipt != "rcpt-1" {
		t.Fatalf("uncertain operations %+v, %v", ops, err)
	}
	if q := peek(r, func(f *fake) string { return f.lastQuery }); q != "state=uncertain" {
		t.Errorf("query %q, want state=uncertain", q)
	}
	got, err := r.c.SettleOperation(r.ctx, "op-1", SettleRequest{Outcome: "refunded"})
	if err != nil || got.State != "failed_refunded" {
		t.Fatalf("settle: %+v, %v", got, err)
	}
	_, err = r.c.SettleOperation(r.ctx, "op-1", SettleRequest{Outcome: "refunded"})
	if StatusOf(err) != 409 || ReasonOf(err) != "not_uncertain" {
		t.Fatalf("settling twice: %v", err)
	}
	if ops, err := r.c.UncertainOperations(r.ctx); err != nil || len(ops) != 0 {
		t.Fatalf("uncertain after settling %+v, %v", ops, err)
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:1", "http://127.0.0.1:1/control"},
		{"http://127.0.0.1:1/", "http://127.0.0.1:1/control"},
		{"http://127.0.0.1:1/admin/control/", "http://127.0.0.1:1/admin/control"},
	}
	for _, tt := range tests {
		got, err := (&Client{BaseURL: tt.in}).base()
		if err != nil || got != tt.want {
			t.Errorf("base(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := (&Client{BaseURL: "nohost"}).Capabilities(context.Background()); err == nil {
		t.Error("bad base url accepted")
	}
}
