package control

import (
	"net/http"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/store"
)

func (a *api) createPermit(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.PermitRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.WalletID == "" || req.KeyID == "" || req.Tool == "" {
		return badRequest("wallet_id, key_id and tool are required")
	}
	ctx := r.Context()
	if _, err := a.c.Store.Wallet(ctx, req.WalletID); err != nil {
		return err
	}
	key, err := a.c.Store.APIKey(ctx, req.KeyID)
	if err != nil {
		return err
	}
	if key.WalletID != req.WalletID {
		return badRequest("key %s belongs to wallet %s, not %s", req.KeyID, key.WalletID, req.WalletID)
	}
	tool, err := a.c.Store.Tool(ctx, req.Tool)
	if err != nil {
		return err
	}
	budget := tool.Price
	if req.Budget != nil {
		budget = *req.Budget
	}
	if budget < 0 {
		return badRequest("budget %d: must not be negative", budget)
	}
	var ttl time.Duration
	if req.TTL != "" {
		ttl, err = time.ParseDuration(req.TTL)
		if err != nil {
			return badRequest("ttl: %v", err)
		}
	}
	if ttl < 0 {
		return badRequest("ttl %v: must not be negative", ttl)
	}
	if ttl == 0 { // omitted or "0s": the permit TTL setting
		ttl = a.c.Gateway.Settings().PermitTTL
	}
	now := a.c.Clock.Now()
	if now.After(store.MaxTime.Add(-ttl)) {
		return fail(http.StatusBadRequest, reasonTimeRange, "ttl %v: the permit would expire after %s, the last time the store keeps",
			ttl, store.MaxTime.Format(time.RFC3339))
	}
	p := store.Permit{ID: store.NewRowID("pmt-"), WalletID: req.WalletID, APIKeyID: req.KeyID, Tool: req.Tool, Budget: budget,
		ExpiresAt: now.Add(ttl), CreatedAt: now}
	if err := a.c.Store.CreatePermit(ctx, p); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, controlapi.Permit{PermitID: p.ID, ExpiresAt: p.ExpiresAt.UTC(), Budget: p.Budget})
	return nil
}
