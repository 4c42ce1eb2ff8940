package control

import (
	"net/http"

	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/store"
)

func walletJSON(wl store.Wallet) map[string]any {
	return map[string]any{"wallet_id": wl.ID, "balance": wl.Balance}
}

func (a *api) createWallet(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Balance int64 `json:"balance"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	id := store.NewRowID("w-")
	if _, _, err := fixtures.OpenWallet(ctx, a.c.Store, id, req.Balance, a.c.Clock.Now()); err != nil {
		return err
	}
	wl, err := a.c.Store.Wallet(ctx, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, walletJSON(wl))
	return nil
}

func (a *api) wallet(w http.ResponseWriter, r *http.Request) error {
	wl, err := a.c.Store.Wallet(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, walletJSON(wl))
	return nil
}

func (a *api) credit(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Amount int64 `json:"amount"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := fixtures.CheckAmount("amount", req.Amount, false); err != nil {
		return err
	}
	ctx := r.Context()
	cur, err := a.c.Store.Wallet(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	if cur.Balance > MaxBalance-req.Amount {
		return badRequest("a balance of %d plus %d would exceed %d", cur.Balance, req.Amount, int64(MaxBalance))
	}
	if err := a.c.Store.Credit(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: r.PathValue("id"), Kind: store.EntryCredit, Amount: req.Amount, At: a.c.Clock.Now()}); err != nil {
		return err
	}
	wl, err := a.c.Store.Wallet(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"wallet_id": wl.ID, "balance": wl.Balance})
	return nil
}

func (a *api) ledger(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if _, err := a.c.Store.Wallet(ctx, r.PathValue("id")); err != nil {
		return err
	}
	es, err := a.c.Store.Ledger(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(es))
	for _, e := range es {
		out = append(out, map[string]any{"id": e.ID, "kind": e.Kind, "amount": e.Amount, "receipt": e.Receipt, "tool": e.Tool, "at": ts(e.At)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out})
	return nil
}

func (a *api) createKey(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		WalletID string `json:"wallet_id"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.WalletID == "" {
		return badRequest("wallet_id is required")
	}
	ctx := r.Context()
	if _, err := a.c.Store.Wallet(ctx, req.WalletID); err != nil {
		return err
	}
	keyID, apiKey, err := a.c.Gateway.IssueAPIKey(ctx, req.WalletID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"key_id": keyID, "api_key": apiKey, "wallet_id": req.WalletID})
	return nil
}
