package soak

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// answer builds what the wire client returns for one JSON-RPC response.
func answer(t *testing.T, msg string) *wire.Answer {
	t.Helper()
	var r wire.Response
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		t.Fatal(err)
	}
	return &wire.Answer{Status: 200, Body: []byte(msg), Message: json.RawMessage(msg), Response: &r}
}

func TestClassify(t *testing.T) {
	live := context.Background()
	over, cancel := context.WithCancel(context.Background())
	cancel()
	result := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"token":"t1","n":1},
		"isError":false,"_meta":{"io.mcpconform/receipt":{"id":"rcpt-1","replayed":false}}}}`
	toolErr := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"upstream answer lost"}],"isError":true,
		"_meta":{"io.mcpconform/receipt":{"id":"rcpt-2"}}}}`
	inProgress := `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"retry","data":{"reason":"idempotency_in_progress","retryable":true}}}`
	inProgressFinal := `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"retry","data":{"reason":"idempotency_in_progress","retryable":false}}}`
	internal := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom","data":{"reason":"internal_error","retryable":false}}}`
	broken := errors.New("post: EOF")
	cases := []struct {
		name   string
		ctx    context.Context
		a      *wire.Answer
		err    error
		how    abandon
		gaveUp bool
		want   Attempt
	}{
		{"result", live, answer(t, result), nil, keep, false,
			Attempt{Kind: KindResult, Receipt: "rcpt-1", Token: "t1", Latency: time.Millisecond}},
		{"tool error result", live, answer(t, toolErr), nil, keep, false,
			Attempt{Kind: KindResult, Receipt: "rcpt-2", IsError: true, Detail: "upstream answer lost", Latency: time.Millisecond}},
		{"retryable in progress", live, answer(t, inProgress), nil, keep, false,
			Attempt{Kind: KindInProgress, Reason: reasonInProgress, Retryable: true, Latency: time.Millisecond}},
		{"in progress said not retryable", live, answer(t, inProgressFinal), nil, keep, false,
			Attempt{Kind: KindError, Reason: reasonInProgress, Detail: "http 200, code -32005: retry", Latency: time.Millisecond}},
		{"other error", live, answer(t, internal), nil, keep, false,
			Attempt{Kind: KindError, Reason: "internal_error", Detail: "http 200, code -32603: boom", Latency: time.Millisecond}},
		{"no JSON-RPC answer", live, &wire.Answer{Status: 502, Body: []byte("bad gateway")}, nil, keep, false,
			Attempt{Kind: KindError, Detail: "http 502 without a JSON-RPC result: bad gateway", Latency: time.Millisecond}},
		{"closed after sending", live, &wire.Answer{Dropped: true}, nil, abandonAfterSend, false,
			Attempt{Kind: KindAbandoned, Detail: "closed after sending"}},
		{"the client's short timeout", live, &wire.Answer{}, broken, abandonAfter(3 * time.Millisecond), true,
			Attempt{Kind: KindAbandoned, Detail: "gave up after 3ms"}},
		{"broken connection", live, &wire.Answer{}, broken, keep, false,
			Attempt{Kind: KindTransport, Detail: "post: EOF", Latency: time.Millisecond}},
		{"broken before the short timeout", live, &wire.Answer{}, broken, abandonAfter(time.Second), false,
			Attempt{Kind: KindTransport, Detail: "post: EOF", Latency: time.Millisecond}},
		{"the soak's deadline", over, &wire.Answer{}, context.Canceled, keep, false,
			Attempt{Kind: KindAbandoned, Detail: "soak deadline: context canceled"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classify(c.ctx, 2, c.a, c.err, c.how, c.gaveUp, time.Millisecond)
			c.want.Proc = 2
			// A result keeps what the model needs of it: its digest.
			if kept := got.Result.Digest != ""; kept != (got.Kind == KindResult) {
				t.Errorf("classify: %s kept digest %q", got.Kind, got.Result.Digest)
			}
			got.Result = judge.CallValue{}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("classify:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
