package control

import (
	"errors"
	"net/http"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/fixtures"
	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/tools"
)

// putServer registers an upstream MCP server: its tools, priced by the
// rule, and the relay of its prompts, resources and completion.
func (a *api) putServer(w http.ResponseWriter, r *http.Request) error {
	if a.c.Servers == nil {
		return fail(http.StatusNotFound, "not_found", "this gateway registers no upstream servers")
	}
	var req controlapi.Server
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Name == "" || req.URL == "" {
		return badRequest("name and url are required")
	}
	if req.Price != nil {
		if err := store.CheckPrice(*req.Price); err != nil {
			return badRequest("%v", err)
		}
	}
	if err := fixtures.HTTPURL(req.URL); err != nil {
		return badRequest("url: %v", err)
	}
	for name, p := range req.Prices {
		if err := store.CheckPrice(p); err != nil {
			return badRequest("prices[%q]: %v", name, err)
		}
	}
	sv := store.Server{Name: req.Name, URL: req.URL, Prefix: req.Prefix, Price: 1, Prices: req.Prices, ReadOnly: req.ReadOnly}
	if req.Price != nil {
		sv.Price = *req.Price
	}
	ts, err := a.c.Servers.RegisterServer(r.Context(), sv)
	if errors.Is(err, tools.ErrUpstream) {
		return fail(http.StatusBadGateway, "upstream_unavailable", "%v", err)
	}
	if err != nil {
		return err
	}
	out := controlapi.RegisteredServer{Name: sv.Name, URL: sv.URL, Prefix: sv.Prefix, Tools: make([]controlapi.ServerTool, 0, len(ts))}
	for _, t := range ts {
		out.Tools = append(out.Tools, controlapi.ServerTool{Name: t.Name, Price: t.Price, ReadOnly: t.ReadOnly, UpstreamTool: t.UpstreamTool})
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (a *api) removeServer(w http.ResponseWriter, r *http.Request) error {
	if a.c.Servers == nil {
		return fail(http.StatusNotFound, "not_found", "this gateway registers no upstream servers")
	}
	if err := a.c.Servers.RemoveServer(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
