package control

import (
	"net/http"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/fixtures"
)

// putTool registers an upstream tool or an alias, or re-prices and
// re-flags a local one (fixtures.PutTool). An alias forwards to the echo
// upstream this API serves on the address the request came in on.
func (a *api) putTool(w http.ResponseWriter, r *http.Request) error {
	var req fixtures.Tool
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := fixtures.PutTool(r.Context(), a.c.Store, req, localUpstreamURL(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, controlapi.RegisteredTool{Name: t.Name, Price: t.Price, ReadOnly: t.ReadOnly, Approval: t.Approval,
		UpstreamURL: t.UpstreamURL, UpstreamTool: t.UpstreamTool, LocalTool: req.LocalTool, Overrides: t.Overrides})
	return nil
}

func (a *api) removeTool(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if _, err := a.c.Store.Tool(ctx, r.PathValue("name")); err != nil {
		return err
	}
	if err := a.c.Store.RemoveTool(ctx, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
