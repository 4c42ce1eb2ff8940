package control

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/faults"
)

// How long POST /control/faults/{id}/await waits, unless told, and at most.
const (
	defaultAwait = 5 * time.Second
	maxAwait     = 2 * time.Minute
)

func faultErr(err error) error {
	switch {
	case errors.Is(err, faults.ErrUnknownPoint):
		return fail(http.StatusBadRequest, "unknown_fault_point", "%v (points: %s)", err, strings.Join(faults.Points(), ", "))
	case errors.Is(err, faults.ErrUnknownAction):
		return fail(http.StatusBadRequest, "unknown_fault_action", "%v", err)
	case errors.Is(err, faults.ErrNotFound):
		return fail(http.StatusNotFound, "not_found", "%v", err)
	}
	return err
}

func (a *api) listFaults(w http.ResponseWriter, r *http.Request) error {
	list := a.c.Faults.List()
	out := controlapi.Faults{Faults: make([]controlapi.FaultState, 0, len(list))}
	for _, st := range list {
		out.Faults = append(out.Faults, faultState(st))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) armFault(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.Fault
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Count < 0 {
		return badRequest("count %d: must not be negative", req.Count)
	}
	st, err := a.c.Faults.Arm(faults.Spec{Point: req.Point, Action: req.Action, Count: req.Count, Match: faults.Match(req.Match)})
	if err != nil {
		return faultErr(err)
	}
	writeJSON(w, http.StatusCreated, faultState(st))
	return nil
}

func (a *api) resetFaults(w http.ResponseWriter, r *http.Request) error {
	a.c.Faults.Reset()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) getFault(w http.ResponseWriter, r *http.Request) error {
	st, err := a.c.Faults.Get(r.PathValue("id"))
	if err != nil {
		return faultErr(err)
	}
	writeJSON(w, http.StatusOK, faultState(st))
	return nil
}

func (a *api) awaitFault(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.AwaitFault
	if err := decode(r, &req); err != nil {
		return err
	}
	waiting := 1
	if req.Waiting != nil {
		waiting = *req.Waiting
	}
	if waiting < 0 {
		return badRequest("waiting %d: must not be negative", waiting)
	}
	timeout := defaultAwait
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil {
			return badRequest("timeout: %v", err)
		}
		timeout = d
	}
	if timeout <= 0 || timeout > maxAwait {
		return badRequest("timeout %v: must be positive and at most %v", timeout, maxAwait)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	st, err := a.c.Faults.Await(ctx, r.PathValue("id"), waiting)
	if err != nil {
		if errors.Is(err, faults.ErrNotFound) {
			return faultErr(err)
		}
		e := fail(http.StatusRequestTimeout, "await_timeout", "%d request(s) waiting at the fault after %v, %d wanted", st.Waiting, timeout, waiting)
		fs := faultState(st)
		e.fault = &fs
		return e
	}
	writeJSON(w, http.StatusOK, faultState(st))
	return nil
}

func (a *api) releaseFault(w http.ResponseWriter, r *http.Request) error {
	st, err := a.c.Faults.Release(r.PathValue("id"))
	if err != nil {
		return faultErr(err)
	}
	writeJSON(w, http.StatusOK, faultState(st))
	return nil
}

func faultState(st faults.Status) controlapi.FaultState {
	return controlapi.FaultState{FaultID: st.ID, Point: st.Point, Action: st.Action, Count: st.Count,
		Match: controlapi.FaultMatch(st.Match), Hits: st.Hits, Waiting: st.Waiting, Released: st.Released}
}
