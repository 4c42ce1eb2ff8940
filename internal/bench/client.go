package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

// Client is the one MCP client every figure is measured with: stateless
// MCP 2026-07-28 over Streamable HTTP (no session, so the bare server and
// the gateway do the same work per request), with request bodies built by
// hand and only the fields a figure needs decoded from the answer. It sends
// the same headers as drivers/wire under 2026-07-28 and is kept lean so that
// the client's own cost, which shares the machine's cores with the servers,
// flatters neither side.
type Client struct {
	URL    string // the MCP endpoint, http://127.0.0.1:PORT/mcp
	APIKey string // "" sends no Authorization
	HTTP   *http.Client
	ids    atomic.Int64
}

// NewHTTP is an HTTP client for loopback load: no proxy, no gzip, and room
// for n idle keep-alive connections (a storm of n reuses warmed ones).
func NewHTTP(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConns:        n + 16,
		MaxIdleConnsPerHost: n + 16,
		IdleConnTimeout:     time.Minute,
	}}
}

// Reply is what a figure needs of one tools/call answer.
type Reply struct {
	Status    int
	Receipt   string // result._meta["io.mcpconform/receipt"].id
	Replayed  bool
	IsError   bool // the tool's result said isError
	Code      int  // JSON-RPC error code, 0 for a result
	Reason    string
	Message   string
	Retryable bool
}

// InProgress is the retryable refusal a twin gets while the first call runs.
func (r Reply) InProgress() bool {
	return r.Code != 0 && r.Reason == "idempotency_in_progress" && r.Retryable
}

// Result reports a tool result (not a JSON-RPC error).
func (r Reply) Result() bool { return r.Status == http.StatusOK && r.Code == 0 && !r.IsError }

// Request is one prepared tools/call: body and headers built before it is
// sent, so a barrier releases requests that only need writing.
type Request struct {
	body   []byte
	tool   string
	key    string
	client *Client
}

// Prepare builds a tools/call of tool with arguments args (a JSON object)
// and, when key is not "", an Idempotency-Key header.
func (c *Client) Prepare(tool string, args []byte, key string) *Request {
	id := c.ids.Add(1)
	b := make([]byte, 0, 256+len(args))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = strconv.AppendQuote(b, tool) // tool names are printable ASCII
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, `,"_meta":{"`+wire.MetaProtocolVersion+`":"`+wire.V20260728+`","`+
		wire.MetaClientInfo+`":{"name":"mcpbench","version":"1"},"`+
		wire.MetaClientCapabilities+`":{}}}}`...)
	return &Request{body: b, tool: tool, key: key, client: c}
}

// Send posts the request and reads its answer. HTTP and JSON-RPC errors are
// in the Reply; the error is for transport failures and unreadable answers.
func (r *Request) Send(ctx context.Context) (Reply, error) {
	c := r.client
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(r.body))
	if err != nil {
		return Reply{}, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", wire.V20260728)
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", r.tool)
	if c.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.APIKey)
	}
	if r.key != "" {
		h.Set("Idempotency-Key", wire.SFString(r.key))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Reply{Status: resp.StatusCode}, fmt.Errorf("read answer: %w", err)
	}
	return decodeReply(resp.StatusCode, raw)
}

// Call prepares and sends at once.
func (c *Client) Call(ctx context.Context, tool string, args []byte, key string) (Reply, error) {
	return c.Prepare(tool, args, key).Send(ctx)
}

func decodeReply(status int, raw []byte) (Reply, error) {
	rp := Reply{Status: status}
	var m struct {
		Result *struct {
			IsError bool `json:"isError"`
			Meta    struct {
				Receipt *struct {
					ID       string `json:"id"`
					Replayed bool   `json:"replayed"`
				} `json:"io.mcpconform/receipt"`
			} `json:"_meta"`
		} `json:"result"`
		Error *wire.RPCError `json:"error"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return rp, fmt.Errorf("http %d, not a JSON-RPC answer: %.200s", status, raw)
	}
	switch {
	case m.Error != nil:
		rp.Code, rp.Message = m.Error.Code, m.Error.Message
		var d struct {
			Reason    string `json:"reason"`
			Retryable bool   `json:"retryable"`
		}
		_ = json.Unmarshal(m.Error.Data, &d) // an error without data keeps its code
		rp.Reason, rp.Retryable = d.Reason, d.Retryable
	case m.Result != nil:
		rp.IsError = m.Result.IsError
		if rc := m.Result.Meta.Receipt; rc != nil {
			rp.Receipt, rp.Replayed = rc.ID, rc.Replayed
		}
	default:
		return rp, fmt.Errorf("http %d, neither result nor error: %.200s", status, raw)
	}
	return rp, nil
}

// String describes a reply for an error message.
func (r Reply) String() string {
	if r.Code != 0 {
		return fmt.Sprintf("http %d, error %d %s", r.Status, r.Code, r.Reason)
	}
	return fmt.Sprintf("http %d, result (receipt %q, replayed %v, isError %v)", r.Status, r.Receipt, r.Replayed, r.IsError)
}
