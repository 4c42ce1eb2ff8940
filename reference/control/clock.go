package control

import (
	"net/http"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
)

func (a *api) clockJSON() controlapi.Clock {
	return controlapi.Clock{Now: a.c.Clock.Now().UTC(), Frozen: a.c.Clock.Frozen()}
}

func (a *api) getClock(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, a.clockJSON())
	return nil
}

func (a *api) setClock(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.SetClock
	if err := decode(r, &req); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, req.Now)
	if err != nil {
		return badRequest("now: an RFC 3339 time is required: %v", err)
	}
	if err := a.clockInRange(t); err != nil {
		return err
	}
	a.c.Clock.Freeze(t)
	writeJSON(w, http.StatusOK, a.clockJSON())
	return nil
}

func (a *api) advanceClock(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.AdvanceClock
	if err := decode(r, &req); err != nil {
		return err
	}
	d, err := time.ParseDuration(req.By)
	if err != nil {
		return badRequest("by: a Go duration is required (\"130s\"): %v", err)
	}
	if err := a.clockInRange(a.c.Clock.Now().Add(d)); err != nil {
		return err
	}
	a.c.Clock.Advance(d)
	writeJSON(w, http.StatusOK, a.clockJSON())
	return nil
}

// clockInRange refuses a clock at which the settings in force would reach
// past the times a store keeps (gateway.Settings.CheckTimes).
func (a *api) clockInRange(t time.Time) error {
	if err := a.c.Gateway.Settings().CheckTimes(t); err != nil {
		return fail(http.StatusBadRequest, reasonTimeRange, "clock: %v", err)
	}
	return nil
}

// reasonTimeRange refuses a time a store cannot keep (store.TimeInRange).
const reasonTimeRange = "time_out_of_range"

func (a *api) resetClock(w http.ResponseWriter, r *http.Request) error {
	a.c.Clock.Unfreeze()
	w.WriteHeader(http.StatusNoContent)
	return nil
}
