package control

import (
	"net/http"
	"slices"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/faults"
)

func (a *api) capabilities(w http.ResponseWriter, r *http.Request) error {
	caps := Capabilities
	if a.c.Servers != nil {
		caps = append(slices.Clone(caps), controlapi.CapServers)
	}
	writeJSON(w, http.StatusOK, controlapi.Capabilities{
		ControlAPI:   Version,
		Capabilities: caps,
		FaultPoints:  faults.Points(),
		FaultActions: faults.Actions(),
		Settings:     settingsJSON(a.c.Gateway.Settings()),
		Store:        a.c.StoreKind,
		Bugs:         a.c.Bugs.List(),
	})
	return nil
}
