package reports

import "testing"

func TestReadAnswerKind(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   Answer
		kind   AnswerKind
	}{
		{0, "", Answer{}, AnswerNone},
		{400, "bad request", Answer{Status: 400}, AnswerHTTP},
		{200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"m","data":{"reason":"insufficient_funds"}}}`,
			Answer{Status: 200, Refusal: true, Reason: "insufficient_funds"}, AnswerRefusal},
		{200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`,
			Answer{Status: 200, Refusal: true, Reason: "rpc error -32602"}, AnswerRefusal},
		{200, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"_meta\":{\"io.mcpconform/receipt\":{\"id\":\"r1\",\"replayed\":true}}}}\n\n",
			Answer{Status: 200, Result: true, Receipt: "r1", Replayed: true}, AnswerReplay},
		{200, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.mcpconform/receipt":{"replayed":true}}}}`,
			Answer{Status: 200, Result: true}, AnswerResult},
	} {
		got := readAnswer(Exchange{Status: tc.status, ResponseBody: tc.body})
		if got != tc.want || got.Kind() != tc.kind {
			t.Errorf("%d %q: got %+v (%s), want %+v (%s)", tc.status, tc.body, got, got.Kind(), tc.want, tc.kind)
		}
	}
}
