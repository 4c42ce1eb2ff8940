package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpconform/mcpconform/drivers/control/controlapi"
	"github.com/mcpconform/mcpconform/reference/gateway"
	"github.com/mcpconform/mcpconform/reference/store"
)

// Reasons of the operations endpoints' refusals (docs/control-api.md).
const (
	reasonInvalidState   = "invalid_state"
	reasonInvalidOutcome = "invalid_outcome"
	reasonInvalidResult  = "invalid_result"
	reasonNotUncertain   = "not_uncertain"
)

// operations lists the uncertain operations: the only state an operator
// has anything to do about (a finished one is final, a running one its
// owner's). The state is required so that a later state is a new value,
// not a changed default.
func (a *api) operations(w http.ResponseWriter, r *http.Request) error {
	if st := r.URL.Query().Get("state"); st != controlapi.OperationUncertain {
		return fail(http.StatusBadRequest, reasonInvalidState, "the query parameter state must be %q, not %q", controlapi.OperationUncertain, st)
	}
	us, err := a.c.Gateway.Uncertain(r.Context())
	if err != nil {
		return err
	}
	out := controlapi.Operations{Operations: make([]controlapi.Operation, 0, len(us))}
	for _, u := range us {
		out.Operations = append(out.Operations, operationOf(u, controlapi.OperationUncertain))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// settle decides one uncertain operation: completed with the result the
// operator found the tool gave, or refunded when it never ran.
func (a *api) settle(w http.ResponseWriter, r *http.Request) error {
	var req controlapi.SettleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	s := gateway.Settlement{Outcome: req.Outcome, Result: req.Result}
	switch req.Outcome {
	case gateway.SettleCompleted:
		if err := checkResult(req.Result); err != nil {
			return err
		}
	case gateway.SettleRefunded:
		if len(req.Result) > 0 && !bytes.Equal(bytes.TrimSpace(req.Result), []byte("null")) {
			return fail(http.StatusBadRequest, reasonInvalidResult, "a refunded operation has no result: leave result out")
		}
		s.Result = nil
	default:
		return fail(http.StatusBadRequest, reasonInvalidOutcome, "outcome must be %q or %q, not %q",
			gateway.SettleCompleted, gateway.SettleRefunded, req.Outcome)
	}
	u, rec, err := a.c.Gateway.Settle(r.Context(), r.PathValue("key"), s)
	if errors.Is(err, store.ErrNotFound) {
		return fail(http.StatusNotFound, "not_found", "no operation %s", r.PathValue("key"))
	}
	if errors.Is(err, store.ErrNotUncertain) {
		return fail(http.StatusConflict, reasonNotUncertain,
			"operation %s is not uncertain (state %s, charged %v): only a charged operation in progress whose owner has been silent for the stale-lock threshold can be settled",
			r.PathValue("key"), rec.State, rec.Charged)
	}
	if err != nil {
		return err
	}
	u.Record = rec
	writeJSON(w, http.StatusOK, operationOf(u, rec.State))
	return nil
}

// checkResult holds a settled result to what a retry will be served: a
// CallToolResult, a JSON object with a content list.
func checkResult(raw json.RawMessage) error {
	var res struct {
		Content []json.RawMessage `json:"content"`
	}
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return fail(http.StatusBadRequest, reasonInvalidResult, "a completed operation needs its result: a CallToolResult object")
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Content == nil {
		return fail(http.StatusBadRequest, reasonInvalidResult, "result must be a CallToolResult with a content list")
	}
	return nil
}

func operationOf(u gateway.Uncertain, state string) controlapi.Operation {
	rec := u.Record
	return controlapi.Operation{Key: rec.Key, State: state, Kind: rec.Kind, IdempotencyKey: rec.ClientKey, WalletID: rec.WalletID,
		KeyID: rec.APIKeyID, Tool: rec.Tool, Receipt: u.Receipt, Charged: u.Charged, CreatedAt: rec.CreatedAt.UTC(), UpdatedAt: rec.UpdatedAt.UTC()}
}
