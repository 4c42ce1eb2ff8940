package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mcpconform/mcpconform/reports"
)

// Answer is what came back for one POST: the HTTP status, headers and raw
// body, the JSON-RPC response picked out of it, and the evidence.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Message is the raw JSON-RPC response chosen as the answer: the one whose
	// id matches the request's, else the last response in the body. Nil when
	// the body held no JSON-RPC response (e.g. a plain-text 400).
	Message  json.RawMessage
	Response *Response
	// Dropped says the client closed the connection on purpose after sending
	// (Call.DropAfterSend); Status is then 0 and nothing was read.
	Dropped  bool
	Exchange reports.Exchange

	receipt        Path
	refusalReceipt Path // nil: DefaultRefusalReceiptPath
	marker         ReplayMarker
}

// Response is a JSON-RPC response.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Content is one item of a tool result's content list.
type Content struct {
	Type string          `json:"type"`
	Text string          `json:"text,omitempty"`
	Raw  json.RawMessage `json:"-"`
}

// Lookup reads a value from the chosen JSON-RPC message by path text
// (see Path); an invalid path finds nothing.
func (a *Answer) Lookup(path string) (json.RawMessage, bool) {
	p, err := ParsePath(path)
	if err != nil || a == nil {
		return nil, false
	}
	return p.Lookup(a.Message)
}

// Receipt is the receipt id at the client's receipt path, "" if absent.
func (a *Answer) Receipt() string {
	if a == nil || a.Message == nil {
		return ""
	}
	p := a.receipt
	if p == nil {
		p = MustParsePath(DefaultReceiptPath)
	}
	return p.LookupString(a.Message)
}

// ReceiptFacts are what the object holding the receipt id says beside it:
// whether the result is a replay ("replayed") and what was charged for it
// ("charged"), each nil when that object has no such member of that type.
func (a *Answer) ReceiptFacts() (replayed *bool, charged *int64) {
	if a == nil || a.Message == nil {
		return nil, nil
	}
	p := a.receipt
	if p == nil {
		p = MustParsePath(DefaultReceiptPath)
	}
	if len(p) < 2 {
		return nil, nil
	}
	raw, ok := p[:len(p)-1].Lookup(a.Message)
	if !ok {
		return nil, nil
	}
	var facts struct {
		Replayed *bool  `json:"replayed"`
		Charged  *int64 `json:"charged"`
	}
	if json.Unmarshal(raw, &facts) != nil {
		return nil, nil
	}
	return facts.Replayed, facts.Charged
}

// HasError reports a JSON-RPC error (a refusal), as opposed to a tool result.
func (a *Answer) HasError() bool {
	return a != nil && a.Response != nil && a.Response.Error != nil
}

// ErrorCode is the JSON-RPC error code, 0 without an error.
func (a *Answer) ErrorCode() int {
	if !a.HasError() {
		return 0
	}
	return a.Response.Error.Code
}

// ErrorMessage is the JSON-RPC error message, "" without an error.
func (a *Answer) ErrorMessage() string {
	if !a.HasError() {
		return ""
	}
	return a.Response.Error.Message
}

// ErrorReason is error.data.reason, the wire contract's stable token.
func (a *Answer) ErrorReason() string {
	if !a.HasError() {
		return ""
	}
	return MustParsePath("reason").LookupString(a.Response.Error.Data)
}

// ErrorReceipt is error.data.receipt: the charge a refusal names (the debit
// an outcome_unknown is about), "" without one.
func (a *Answer) ErrorReceipt() string {
	if !a.HasError() {
		return ""
	}
	if a.refusalReceipt != nil {
		return a.refusalReceipt.LookupString(a.Message)
	}
	return MustParsePath("receipt").LookupString(a.Response.Error.Data)
}

// Retryable is error.data.retryable; false without an error.
func (a *Answer) Retryable() bool {
	if !a.HasError() {
		return false
	}
	v, ok := MustParsePath("retryable").Lookup(a.Response.Error.Data)
	return ok && string(v) == "true"
}

// HasRetryable says the error's data has a retryable member at all.
func (a *Answer) HasRetryable() bool {
	if !a.HasError() {
		return false
	}
	_, ok := MustParsePath("retryable").Lookup(a.Response.Error.Data)
	return ok
}

// Result is the raw JSON-RPC result, nil on an error.
func (a *Answer) Result() json.RawMessage {
	if a == nil || a.Response == nil {
		return nil
	}
	return a.Response.Result
}

// IsError is the tool result's isError flag (the tool failed, not the call).
func (a *Answer) IsError() bool {
	v, ok := MustParsePath("isError").Lookup(a.Result())
	return ok && string(v) == "true"
}

// StructuredContent is the tool result's structuredContent, nil if absent.
func (a *Answer) StructuredContent() json.RawMessage {
	v, ok := MustParsePath("structuredContent").Lookup(a.Result())
	if !ok || string(v) == "null" {
		return nil
	}
	return v
}

// Content is the tool result's content list.
func (a *Answer) Content() []Content {
	v, ok := MustParsePath("content").Lookup(a.Result())
	if !ok {
		return nil
	}
	var raws []json.RawMessage
	if json.Unmarshal(v, &raws) != nil {
		return nil
	}
	out := make([]Content, 0, len(raws))
	for _, r := range raws {
		var c Content
		_ = json.Unmarshal(r, &c) // a malformed item keeps only Raw
		c.Raw = r
		out = append(out, c)
	}
	return out
}

// Text joins the text items of the content list with newlines.
func (a *Answer) Text() string {
	var parts []string
	for _, c := range a.Content() {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// maxBody bounds what one answer may hold in memory.
const maxBody = 16 << 20

// readAnswer reads the body of resp and picks the response for wantID. An SSE
// stream is read only until the matching response arrived, because a server
// may keep the stream open after it.
func readAnswer(resp *http.Response, wantID json.RawMessage) (body []byte, msg json.RawMessage, err error) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	limited := io.LimitReader(resp.Body, maxBody)
	if mt != "text/event-stream" {
		body, err = io.ReadAll(limited)
		if err != nil {
			return body, nil, fmt.Errorf("read body: %w", err)
		}
		return body, pick(splitJSON(body), wantID), nil
	}
	var buf bytes.Buffer
	var msgs []json.RawMessage
	err = readSSE(io.TeeReader(limited, &buf), func(data string) bool {
		m := json.RawMessage(data)
		if !json.Valid(m) {
			return true
		}
		msgs = append(msgs, m)
		return !(isResponse(m) && wantID != nil && sameID(idOf(m), wantID))
	})
	if err != nil {
		return buf.Bytes(), pick(msgs, wantID), fmt.Errorf("read event stream: %w", err)
	}
	return buf.Bytes(), pick(msgs, wantID), nil
}

// readSSE calls onData with each event's data until it returns false or the
// stream ends. Field parsing follows the HTML event-stream rules that matter
// here: data lines join with "\n", one space after the colon is dropped,
// other fields and comments are ignored.
func readSSE(r io.Reader, onData func(string) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var data []string
	has := false
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if has && !onData(strings.Join(data, "\n")) {
				return nil
			}
			data, has = nil, false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if field == "data" {
			data = append(data, value)
			has = true
		}
	}
	if has {
		onData(strings.Join(data, "\n"))
	}
	return sc.Err()
}

// splitJSON returns the messages of a JSON body: one object, or the items of
// an array (a batch answer).
func splitJSON(body []byte) []json.RawMessage {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || !json.Valid(t) {
		return nil
	}
	if t[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(t, &items) != nil {
			return nil
		}
		return items
	}
	return []json.RawMessage{t}
}

// pick chooses the response whose id is wantID, else the last response.
func pick(msgs []json.RawMessage, wantID json.RawMessage) json.RawMessage {
	var last json.RawMessage
	for _, m := range msgs {
		if !isResponse(m) {
			continue
		}
		if wantID != nil && sameID(idOf(m), wantID) {
			return m
		}
		last = m
	}
	return last
}

// isResponse tells a response from a request or notification the server sent
// on the same stream.
func isResponse(m json.RawMessage) bool {
	var probe struct {
		Method *string          `json:"method"`
		Result json.RawMessage  `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if json.Unmarshal(m, &probe) != nil {
		return false
	}
	return probe.Method == nil && (probe.Result != nil || probe.Error != nil)
}

func idOf(m json.RawMessage) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(m, &probe)
	return probe.ID
}

// sameID compares JSON-RPC ids as JSON values: 7 and 7.0 are the same id,
// "7" and 7 are not.
func sameID(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return len(a) > 0
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return x == y // float64 == float64, string == string
}
