package steps

import (
	"encoding/json"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

// answer is one call's outcome as the steps judge it: what came back on the
// wire, or the transport failure that stood in its place.
type answer struct {
	*wire.Answer
	TransportError string
}

func newAnswer(a *wire.Answer, err error) *answer {
	if a == nil && err == nil {
		return nil
	}
	out := &answer{Answer: a}
	if a == nil {
		out.Answer = &wire.Answer{}
	}
	if err != nil {
		out.TransportError = err.Error()
	}
	return out
}

// IsResult reports a JSON-RPC result (not an error, not a broken exchange).
func (a *answer) IsResult() bool {
	return a != nil && a.TransportError == "" && a.Response != nil && a.Response.Error == nil && len(a.Response.Result) > 0
}

// IsRefusal reports a JSON-RPC error answer.
func (a *answer) IsRefusal() bool {
	return a != nil && a.HasError()
}

// ResultField returns one top-level field of the result, nil if absent.
func (a *answer) ResultField(name string) json.RawMessage {
	if !a.IsResult() {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(a.Result(), &m) != nil {
		return nil
	}
	return m[name]
}
