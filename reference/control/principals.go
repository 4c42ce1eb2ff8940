package control

import (
	"net/http"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/fixtures"
)

func (a *api) putTrust(w http.ResponseWriter, r *http.Request) error {
	var req fixtures.Trust
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := fixtures.PutTrust(r.Context(), a.c.Store, req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// createPrincipal registers a principal, or updates the one with the same
// provider, issuer and subject in place (fixtures.PutPrincipal).
func (a *api) createPrincipal(w http.ResponseWriter, r *http.Request) error {
	var req fixtures.Principal
	if err := decode(r, &req); err != nil {
		return err
	}
	p, err := fixtures.PutPrincipal(r.Context(), a.c.Store, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, controlapi.PrincipalRef{PrincipalID: p.ID})
	return nil
}

func (a *api) revokePrincipal(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if _, err := a.c.Store.PrincipalByID(ctx, r.PathValue("id")); err != nil {
		return err
	}
	if err := a.c.Store.RevokePrincipal(ctx, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
