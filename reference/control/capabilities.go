package control

import (
	"net/http"
	"slices"

	"github.com/mcpconform/mcpconform/reference/faults"
)

func (a *api) capabilities(w http.ResponseWriter, r *http.Request) error {
	caps := Capabilities
	if a.c.Servers != nil {
		caps = append(slices.Clone(caps), "servers")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"control_api":   Version,
		"capabilities":  caps,
		"fault_points":  faults.Points(),
		"fault_actions": faults.Actions(),
		"settings":      settingsJSON(a.c.Gateway.Settings()),
		"store":         a.c.StoreKind,
		"bugs":          a.c.Bugs.List(),
	})
	return nil
}
