package wire

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestReadAnswer(t *testing.T) {
	tests := []struct {
		name, ctype, body string
		id                string
		wantMsgID         string // "" means no message picked
	}{
		{name: "json", ctype: "application/json", body: `{"jsonrpc":"2.0","id":3,"result":{}}`, id: "3", wantMsgID: "3"},
		{name: "json other id still picked", ctype: "application/json; charset=utf-8",
			body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, id: "3", wantMsgID: "null"},
		{name: "json plain text", ctype: "text/plain", body: "Bad Request: nope", id: "3"},
		{name: "json batch answer", ctype: "application/json",
			body: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, id: "1", wantMsgID: "1"},
		{name: "sse single", ctype: "text/event-stream",
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}\n\n", id: `"a"`, wantMsgID: `"a"`},
		{name: "sse notification first, crlf", ctype: "text/event-stream",
			body: ": comment\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\r\n\r\n", id: "7", wantMsgID: "7"},
		{name: "sse server request with same id is not the answer", ctype: "text/event-stream",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", id: "7", wantMsgID: "7"},
		{name: "sse multi-line data", ctype: "text/event-stream",
			body: "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":9,\"result\":{}}\n\n", id: "9", wantMsgID: "9"},
		{name: "sse float id matches int", ctype: "text/event-stream",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":9.0,\"result\":{}}\n\n", id: "9", wantMsgID: "9.0"},
		{name: "sse string id does not match number but is last", ctype: "text/event-stream",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":\"9\",\"result\":{}}\n\n", id: "9", wantMsgID: `"9"`},
		{name: "sse no trailing blank line", ctype: "text/event-stream",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", id: "1", wantMsgID: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{Header: http.Header{"Content-Type": {tt.ctype}}, Body: io.NopCloser(strings.NewReader(tt.body))}
			_, msg, err := readAnswer(resp, json.RawMessage(tt.id))
			if err != nil {
				t.Fatalf("readAnswer: %v", err)
			}
			if tt.wantMsgID == "" {
				if msg != nil {
					t.Fatalf("picked %s, want none", msg)
				}
				return
			}
			if got := string(idOf(msg)); got != tt.wantMsgID {
				t.Fatalf("picked id %s, want %s (msg %s)", got, tt.wantMsgID, msg)
			}
		})
	}
}

// An SSE stream that stays open after the answer must not block the reader.
func TestReadAnswerStopsAtMatch(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		// never closed: a server holding the stream open
	}()
	defer pw.Close()
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}
	_, msg, err := readAnswer(resp, json.RawMessage("1"))
	if err != nil || msg == nil {
		t.Fatalf("readAnswer = %s, %v", msg, err)
	}
}

func TestAnswerAccessors(t *testing.T) {
	ok := mkAnswer(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b"}],
		"structuredContent":{"n":1},"isError":true,"_meta":{"io.mcpconform/receipt":{"id":"rcpt-9","replayed":true}}}}`)
	if got := ok.Receipt(); got != "rcpt-9" {
		t.Errorf("Receipt = %q", got)
	}
	if !ok.IsError() || ok.HasError() || ok.ErrorCode() != 0 || ok.ErrorReason() != "" || ok.Retryable() {
		t.Errorf("ok answer: IsError=%v HasError=%v code=%d reason=%q retryable=%v", ok.IsError(), ok.HasError(), ok.ErrorCode(), ok.ErrorReason(), ok.Retryable())
	}
	if got := string(ok.StructuredContent()); got != `{"n":1}` {
		t.Errorf("StructuredContent = %s", got)
	}
	if got := ok.Text(); got != "a\nb" {
		t.Errorf("Text = %q", got)
	}
	if c := ok.Content(); len(c) != 3 || c[1].Type != "image" || !strings.Contains(string(c[1].Raw), `"data":"x"`) {
		t.Errorf("Content = %+v", c)
	}
	if v, found := ok.Lookup("result._meta['io.mcpconform/receipt'].replayed"); !found || string(v) != "true" {
		t.Errorf("Lookup replayed = %s %v", v, found)
	}

	refused := mkAnswer(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"busy","data":{"reason":"idempotency_in_progress","retryable":true}}}`)
	if !refused.HasError() || refused.ErrorCode() != -32005 || refused.ErrorReason() != "idempotency_in_progress" || !refused.Retryable() || refused.ErrorMessage() != "busy" {
		t.Errorf("refused: %+v", refused.Response.Error)
	}
	if refused.Receipt() != "" || refused.IsError() || refused.StructuredContent() != nil {
		t.Errorf("refused answer has result accessors")
	}

	custom := mkAnswer(t, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"receipt":42}}}`)
	custom.receipt = MustParsePath("result._meta.receipt")
	if got := custom.Receipt(); got != "42" {
		t.Errorf("custom Receipt = %q", got)
	}

	unknown := mkAnswer(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-31504,"message":"unknown","data":{"reason":"outcome_unknown","receipt":"r1","billing":{"debit":"d7"}}}}`)
	if got := unknown.ErrorReceipt(); got != "r1" {
		t.Errorf("default ErrorReceipt = %q, want r1 (data.receipt)", got)
	}
	unknown.refusalReceipt = MustParsePath("error.data.billing.debit")
	if got := unknown.ErrorReceipt(); got != "d7" {
		t.Errorf("custom ErrorReceipt = %q, want d7", got)
	}

	var none *Answer
	if none.Receipt() != "" || none.HasError() || none.IsError() {
		t.Errorf("nil answer accessors")
	}
}

func mkAnswer(t *testing.T, msg string) *Answer {
	t.Helper()
	var r Response
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		t.Fatal(err)
	}
	return &Answer{Message: json.RawMessage(msg), Response: &r}
}
