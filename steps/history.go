package steps

import (
	"encoding/json"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

type opValue struct {
	Tool      string `json:"tool"`
	Key       string `json:"key,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Receipt   string `json:"receipt,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
}

func invokeOp(process string, c *wire.Call) reports.Op {
	return reports.Op{Process: process, Type: "invoke", F: "tools/call",
		Value: mustJSON(opValue{Tool: c.Tool, Key: c.IdempotencyKey, Arguments: c.Arguments})}
}

// outcomeOp classifies an answer: ok with a receipt, fail for a definite
// refusal, info when the outcome is unknown (transport error, in progress).
func outcomeOp(process string, c *wire.Call, a *answer, err error) reports.Op {
	v := opValue{Tool: c.Tool, Key: c.IdempotencyKey}
	typ := "info"
	switch {
	case a == nil || a.TransportError != "":
		if err != nil {
			v.Error = err.Error()
		} else if a != nil {
			v.Error = a.TransportError
		}
	case a.IsResult():
		typ, v.Receipt = "ok", a.Receipt()
	case a.IsRefusal():
		v.Reason = a.ErrorReason()
		if !a.Retryable() {
			typ = "fail"
		}
	}
	raw, _ := json.Marshal(v)
	return reports.Op{Process: process, Type: typ, F: "tools/call", Value: raw}
}
