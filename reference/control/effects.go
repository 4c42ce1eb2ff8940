package control

import (
	"net/http"
	"strings"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/store"
)

func (a *api) dispatches(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ds, err := a.c.Store.Dispatches(r.Context(), store.DispatchFilter{Tool: q.Get("tool"), WalletID: q.Get("wallet_id")})
	if err != nil {
		return err
	}
	out := controlapi.Dispatches{Dispatches: make([]controlapi.Dispatch, 0, len(ds))}
	for _, d := range ds {
		out.Dispatches = append(out.Dispatches, controlapi.Dispatch{ID: d.ID, Tool: d.Tool, WalletID: d.WalletID, Fingerprint: d.Fingerprint, At: d.At.UTC()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) locks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	wallet, tool := q.Get("wallet_id"), q.Get("tool")
	if wallet == "" {
		return badRequest("the query parameter wallet_id is required (tool is optional)")
	}
	prefix := a.c.Gateway.LockIdentityPrefix(wallet, tool)
	if tool == "" {
		// "<wallet>||" names the empty tool; every tool of the wallet
		// shares "<wallet>|".
		prefix = strings.TrimSuffix(prefix, "|")
	}
	ls, err := a.c.Store.Locks(r.Context(), prefix)
	if err != nil {
		return err
	}
	out := controlapi.Locks{Locks: make([]controlapi.Lock, 0, len(ls))}
	for _, l := range ls {
		out.Locks = append(out.Locks, controlapi.Lock{Identity: l.Identity, Owner: l.Owner, Fence: l.Fence, AcquiredAt: l.AcquiredAt.UTC()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
