package reports

import (
	"encoding/json"
	"strconv"
	"strings"
)

// A recorded answer (an Exchange's status and raw body) is read in two
// ways: here, as JSON (the body itself or an SSE stream's last answer), for
// the report's outcomes and timeline; and by internal/repro as text, the
// way the generated repro.sh greps the replay's answer, because the kind
// it expects must be the one the script will compute from the same bytes
// (a body JSON reads as a refusal but grep does not, say `"error": {`, must
// be expected as grep sees it). Both readers fill an Answer and take its
// Kind from the one decision below. internal/soak classifies live answers
// (wire.Answer, already parsed) with the abandonment and retryability only
// a live call has, in its own serialised vocabulary, and does not use it.

// AnswerKind is how a recorded call ended.
type AnswerKind string

const (
	// AnswerNone is no answer: no HTTP status was recorded.
	AnswerNone AnswerKind = "no answer"
	// AnswerRefusal is a JSON-RPC error.
	AnswerRefusal AnswerKind = "refusal"
	// AnswerReplay is a result whose receipt says it was replayed.
	AnswerReplay AnswerKind = "replay"
	// AnswerResult is any other JSON-RPC result.
	AnswerResult AnswerKind = "result"
	// AnswerHTTP is an HTTP status without a JSON-RPC answer.
	AnswerHTTP AnswerKind = "http"
)

// Answer is what a reader found in one recorded answer.
type Answer struct {
	Status   int    // HTTP status; 0: none
	Refusal  bool   // a JSON-RPC error
	Reason   string // the refusal's reason as the reader words it
	Result   bool   // a JSON-RPC result
	Receipt  string // the result's receipt id, "" without one
	Replayed bool   // the receipt says the result is a replay
}

// Kind decides how the answer ended: no status is no answer; then a
// JSON-RPC error, a replayed receipt, a result, in that order; else only
// the HTTP status.
func (a Answer) Kind() AnswerKind {
	switch {
	case a.Status == 0:
		return AnswerNone
	case a.Refusal:
		return AnswerRefusal
	case a.Replayed:
		return AnswerReplay
	case a.Result:
		return AnswerResult
	}
	return AnswerHTTP
}

// readAnswer reads an exchange's answer as JSON. A refusal without
// data.reason is worded "rpc error CODE"; Replayed needs a receipt id.
func readAnswer(e Exchange) Answer {
	a := Answer{Status: e.Status}
	m, ok := rpcMessage(e.ResponseBody)
	if !ok {
		return a
	}
	if m.Error != nil {
		a.Refusal, a.Reason = true, m.Error.reason()
		return a
	}
	a.Result = true
	if r := m.Result.receipt(); r != nil {
		a.Receipt, a.Replayed = r.ID, r.Replayed && r.ID != ""
	}
	return a
}

type rpcMsg struct {
	Result *rpcResult `json:"result"`
	Error  *rpcError  `json:"error"`
}

type rpcResult struct {
	Meta map[string]json.RawMessage `json:"_meta"`
}

type rpcReceipt struct {
	ID       string `json:"id"`
	Replayed bool   `json:"replayed"`
}

func (r *rpcResult) receipt() *rpcReceipt {
	raw, ok := r.Meta["io.mcpconform/receipt"]
	if !ok {
		return nil
	}
	var rc rpcReceipt
	if json.Unmarshal(raw, &rc) != nil {
		return nil
	}
	return &rc
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) reason() string {
	var d struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(e.Data, &d) == nil && d.Reason != "" {
		return d.Reason
	}
	return "rpc error " + strconv.Itoa(e.Code)
}

// rpcMessage finds the JSON-RPC answer in a body: the body itself, or for
// an SSE stream the last event whose data is an answer.
func rpcMessage(body string) (rpcMsg, bool) {
	try := func(s string) (rpcMsg, bool) {
		var m rpcMsg
		if json.Unmarshal([]byte(s), &m) != nil || (m.Result == nil && m.Error == nil) {
			return rpcMsg{}, false
		}
		return m, true
	}
	if m, ok := try(body); ok {
		return m, true
	}
	var found rpcMsg
	ok := false
	for event := range strings.SplitSeq(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		var data []string
		for line := range strings.SplitSeq(event, "\n") {
			if rest, isData := strings.CutPrefix(line, "data:"); isData {
				data = append(data, strings.TrimPrefix(rest, " "))
			}
		}
		if m, good := try(strings.Join(data, "\n")); good {
			found, ok = m, true
		}
	}
	return found, ok
}
