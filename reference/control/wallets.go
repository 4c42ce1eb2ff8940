package control

import (
	"net/http"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/store"
)

func walletJSON(wl store.Wallet) controlapi.Wallet {
	return controlapi.Wallet{WalletID: wl.ID, Balance: wl.Balance}
}

func (a *api) createWallet(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.NewWallet
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
	var req controlapi.Credit
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
	writeJSON(w, http.StatusOK, walletJSON(wl))
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
	out := controlapi.Ledger{Entries: make([]controlapi.LedgerEntry, 0, len(es))}
	for _, e := range es {
		out.Entries = append(out.Entries, controlapi.LedgerEntry{ID: e.ID, Kind: e.Kind, Amount: e.Amount, Receipt: e.Receipt, Tool: e.Tool, At: e.At.UTC()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) createKey(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.NewKey
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
	writeJSON(w, http.StatusCreated, controlapi.Key{KeyID: keyID, APIKey: apiKey, WalletID: req.WalletID})
	return nil
}

// revokeKey revokes an API key: every gateway process on the store refuses
// it from its next request on (the gateway reads keys on every request).
// Revoking it again answers the same, so a retried revocation is no error.
func (a *api) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := a.c.Store.RevokeAPIKey(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
