package control

import (
	"net/http"
	"strings"

	"github.com/mcpconform/mcpconform/reference/store"
)

func (a *api) dispatches(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ds, err := a.c.Store.Dispatches(r.Context(), store.DispatchFilter{Tool: q.Get("tool"), WalletID: q.Get("wallet_id")})
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(ds))
	for _, d := range ds {
		out = append(out, map[string]any{"id": d.ID, "tool": d.Tool, "wallet_id": d.WalletID, "fingerprint": d.Fingerprint, "at": ts(d.At)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"dispatches": out})
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
	out := make([]map[string]any, 0, len(ls))
	for _, l := range ls {
		out = append(out, map[string]any{"identity": l.Identity, "owner": l.Owner, "fence": l.Fence, "acquired_at": ts(l.AcquiredAt)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"locks": out})
	return nil
}
