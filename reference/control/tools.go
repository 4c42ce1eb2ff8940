package control

import (
	"net/http"

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
	out := map[string]any{"name": t.Name, "price": t.Price, "read_only": t.ReadOnly, "approval": t.Approval,
		"upstream_url": t.UpstreamURL, "upstream_tool": t.UpstreamTool}
	if req.LocalTool != "" {
		out["local_tool"] = req.LocalTool
	}
	if t.Overrides != nil {
		out["overrides"] = t.Overrides
	}
	writeJSON(w, http.StatusCreated, out)
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
