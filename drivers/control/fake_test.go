package control

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// fake is an in-memory implementation of docs/control-api.md, just enough
// to prove the client speaks the contract: paths, methods, bodies, status
// codes and error reasons.
type fake struct {
	token string

	mu         sync.Mutex
	n          int
	wallets    map[string]int64
	ledger     map[string][]judge.LedgerEntry
	keys       map[string]string // key id -> wallet id
	trust      []Trust
	principals map[string]*Principal
	revoked    map[string]bool
	tools      map[string]Tool
	settings   Settings
	startup    Settings
	clock      Clock
	faults     map[string]*FaultState
	changed    chan struct{} // closed and replaced when a fault changes
	lastQuery  string
	settled    bool // the one uncertain operation, op-1
}

func newFake(token string) *fake {
	s := Settings{WindowSeconds: 300, PermitTTLSeconds: 120, EffectiveWindowSeconds: 120, StaleLockSeconds: 120, LockTimeout: Duration(time.Second)}
	return &fake{
		token: token, wallets: map[string]int64{}, ledger: map[string][]judge.LedgerEntry{},
		keys: map[string]string{}, principals: map[string]*Principal{}, revoked: map[string]bool{},
		tools: map[string]Tool{}, settings: s, startup: s, faults: map[string]*FaultState{},
		changed: make(chan struct{}), clock: Clock{Now: time.Now().UTC()},
	}
}

func (f *fake) id(prefix string) string { f.n++; return fmt.Sprintf("%s-%d", prefix, f.n) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func refuse(w http.ResponseWriter, status int, reason, sentence string) {
	writeJSON(w, status, map[string]string{"error": sentence, "reason": reason})
}

func (f *fake) handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, fn func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+f.token {
				refuse(w, 401, "control_token_required", "control token required")
				return
			}
			if r.ContentLength > 0 && r.Header.Get("Content-Type") != "application/json" {
				refuse(w, 400, "bad_request", "json only")
				return
			}
			f.mu.Lock()
			f.lastQuery = r.URL.RawQuery
			f.mu.Unlock()
			fn(w, r)
		})
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			refuse(w, 400, "bad_request", err.Error())
			return false
		}
		return true
	}
	h("GET /control/capabilities", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, Capabilities{ControlAPI: "mcpconform/1", Capabilities: []string{CapFixtures, CapLedger, CapClock, CapFaults},
			FaultPoints: []string{"fence.read", "dispatch.after"}, FaultActions: []string{"pause", "fail"}, Settings: f.settings, Store: "sqlite", Bugs: []string{}})
	})
	h("POST /control/wallets", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Balance int64 }
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		id := f.id("w")
		f.wallets[id] = in.Balance
		writeJSON(w, 201, Wallet{WalletID: id, Balance: in.Balance})
	})
	h("POST /control/wallets/{id}/credit", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Amount int64 }
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		id := r.PathValue("id")
		if _, ok := f.wallets[id]; !ok {
			refuse(w, 404, "not_found", "no such wallet")
			return
		}
		f.wallets[id] += in.Amount
		f.ledger[id] = append(f.ledger[id], judge.LedgerEntry{ID: f.id("le"), Kind: "credit", Amount: in.Amount, At: time.Now().UTC()})
		writeJSON(w, 200, map[string]int64{"balance": f.wallets[id]})
	})
	h("GET /control/wallets/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		b, ok := f.wallets[r.PathValue("id")]
		if !ok {
			refuse(w, 404, "not_found", "no such wallet")
			return
		}
		writeJSON(w, 200, Wallet{WalletID: r.PathValue("id"), Balance: b})
	})
	h("GET /control/wallets/{id}/ledger", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"entries": append([]judge.LedgerEntry{}, f.ledger[r.PathValue("id")]...)})
	})
	h("POST /control/keys", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			WalletID string `json:"wallet_id"`
		}
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		id := f.id("k")
		f.keys[id] = in.WalletID
		writeJSON(w, 201, Key{KeyID: id, APIKey: "mcpk_" + id + "_secret"})
	})
	h("POST /control/trust", func(w http.ResponseWriter, r *http.Request) {
		var in Trust
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		f.trust = append(f.trust, in)
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	h("POST /control/principals", func(w http.ResponseWriter, r *http.Request) {
		var in Principal
		if !decode(w, r, &in) {
			return
		}
		if in.Tools == nil {
			refuse(w, 400, "bad_request", "tools must be a list")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		id := f.id("p")
		f.principals[id] = &in
		writeJSON(w, 201, map[string]string{"principal_id": id})
	})
	h("POST /control/principals/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.principals[r.PathValue("id")] == nil {
			refuse(w, 404, "not_found", "no such principal")
			return
		}
		f.revoked[r.PathValue("id")] = true
		w.WriteHeader(204)
	})
	h("POST /control/tools", func(w http.ResponseWriter, r *http.Request) {
		var in Tool
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tools[in.Name] = in
		writeJSON(w, 201, map[string]string{"name": in.Name})
	})
	h("DELETE /control/tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.tools[r.PathValue("name")]; !ok {
			refuse(w, 404, "not_found", "no such tool")
			return
		}
		delete(f.tools, r.PathValue("name"))
		w.WriteHeader(204)
	})
	h("POST /control/permits", func(w http.ResponseWriter, r *http.Request) {
		var in PermitRequest
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		ttl, _ := time.ParseDuration(in.TTL)
		writeJSON(w, 201, Permit{PermitID: f.id("pmt"), ExpiresAt: f.clock.Now.Add(ttl)})
	})
	h("GET /control/dispatches", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"dispatches": []Dispatch{{ID: "d-1", Tool: r.URL.Query().Get("tool"), WalletID: r.URL.Query().Get("wallet_id"), Fingerprint: "fp"}}})
	})
	h("GET /control/locks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"locks": []Lock{{Identity: "i", Owner: "o", Fence: 2}}})
	})
	h("GET /control/operations", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("state") != controlapi.OperationUncertain {
			refuse(w, 400, "invalid_state", "state must be uncertain")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		ops := []Operation{}
		if !f.settled {
			ops = append(ops, Operation{Key: "op-1", State: controlapi.OperationUncertain, Receipt: "rcpt-1", Charged: 3})
		}
		writeJSON(w, 200, controlapi.Operations{Operations: ops})
	})
	h("POST /control/operations/{key}/settle", func(w http.ResponseWriter, r *http.Request) {
		var in SettleRequest
		if !decode(w, r, &in) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.PathValue("key") != "op-1":
			refuse(w, 404, "not_found", "no such operation")
		case f.settled:
			refuse(w, 409, "not_uncertain", "already settled")
		case in.Outcome != "completed" && in.Outcome != "refunded":
			refuse(w, 400, "invalid_outcome", "completed or refunded")
		default:
			f.settled = true
			state := "completed"
			if in.Outcome == "refunded" {
				state = "failed_refunded"
			}
			writeJSON(w, 200, Operation{Key: "op-1", State: state, Receipt: "rcpt-1", Charged: 3})
		}
	})
	h("GET /control/clock", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, f.clock)
	})
	h("PUT /control/clock", func(w http.ResponseWriter, r *http.Request) {
		var in controlapi.SetClock
		if !decode(w, r, &in) {
			return
		}
		now, err := time.Parse(time.RFC3339Nano, in.Now)
		if err != nil {
			refuse(w, 400, "bad_request", err.Error())
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.clock = Clock{Now: now, Frozen: true}
		writeJSON(w, 200, f.clock)
	})
	h("POST /control/clock/advance", func(w http.ResponseWriter, r *http.Request) {
		var in controlapi.AdvanceClock
		if !decode(w, r, &in) {
			return
		}
		by, err := time.ParseDuration(in.By)
		if err != nil {
			refuse(w, 400, "bad_request", err.Error())
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.clock.Now = f.clock.Now.Add(by)
		writeJSON(w, 200, f.clock)
	})
	h("DELETE /control/clock", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.clock.Frozen = false
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	h("PUT /control/settings", func(w http.ResponseWriter, r *http.Request) {
		var in SettingsPatch
		if !decode(w, r, &in) {
			return
		}
		for _, v := range []*float64{in.WindowSeconds, in.PermitTTLSeconds, in.StaleLockSeconds} {
			if v != nil && *v < 0 {
				refuse(w, 400, "invalid_setting", "negative setting")
				return
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if in.WindowSeconds != nil {
			f.settings.WindowSeconds = *in.WindowSeconds
		}
		if in.PermitTTLSeconds != nil {
			f.settings.PermitTTLSeconds = *in.PermitTTLSeconds
		}
		if in.StaleLockSeconds != nil {
			f.settings.StaleLockSeconds = *in.StaleLockSeconds
		}
		f.settings.EffectiveWindowSeconds = min(f.settings.WindowSeconds, f.settings.PermitTTLSeconds)
		writeJSON(w, 200, f.settings)
	})
	h("DELETE /control/settings", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.settings = f.startup
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	h("POST /control/faults", func(w http.ResponseWriter, r *http.Request) {
		var in Fault
		if !decode(w, r, &in) {
			return
		}
		if !slices.Contains([]string{"fence.read", "dispatch.after"}, in.Point) {
			refuse(w, 400, "unknown_fault_point", "unknown fault point")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		id := f.id("f")
		f.faults[id] = &FaultState{FaultID: id, Point: in.Point, Action: in.Action}
		writeJSON(w, 201, map[string]string{"fault_id": id})
	})
	h("GET /control/faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.faults[r.PathValue("id")]
		if st == nil {
			refuse(w, 404, "not_found", "no such fault")
			return
		}
		writeJSON(w, 200, st)
	})
	h("POST /control/faults/{id}/await", func(w http.ResponseWriter, r *http.Request) {
		var in controlapi.AwaitFault
		if !decode(w, r, &in) {
			return
		}
		timeout, _ := time.ParseDuration(in.Timeout)
		waiting := 1
		if in.Waiting != nil {
			waiting = *in.Waiting
		}
		deadline := time.After(timeout)
		for {
			f.mu.Lock()
			st := f.faults[r.PathValue("id")]
			if st == nil {
				f.mu.Unlock()
				refuse(w, 404, "not_found", "no such fault")
				return
			}
			if st.Waiting >= waiting {
				cp := *st
				f.mu.Unlock()
				writeJSON(w, 200, cp)
				return
			}
			ch := f.changed
			f.mu.Unlock()
			select {
			case <-ch:
			case <-deadline:
				refuse(w, 408, "await_timeout", "not enough waiting requests")
				return
			}
		}
	})
	h("POST /control/faults/{id}/release", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		st := f.faults[r.PathValue("id")]
		if st == nil {
			refuse(w, 404, "not_found", "no such fault")
			return
		}
		st.Released, st.Waiting = true, 0
		writeJSON(w, 200, st)
	})
	h("DELETE /control/faults", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.faults = map[string]*FaultState{}
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	return mux
}

// arrive simulates a request reaching a paused fault point.
func (f *fake) arrive(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[id].Waiting++
	f.faults[id].Hits++
	close(f.changed)
	f.changed = make(chan struct{})
}
