// Package effectsrv is a small MCP server whose write tool is the side
// effect, as a messaging server's send_message is: there is no upstream
// behind it for the harness's probe, only its own read tool, which lists
// the messages written. It takes the idempotency key in the write tool's
// arguments (profile key_placement "argument") and is idempotent by key;
// its bug switches break that in the ways such servers do, so the
// harness's read-tool observer (profile effects) is shown to catch them.
// With Options.ParamsKey it takes the key as a member of the tools/call
// params instead (key_placement "params"), as the closed MCP proposal
// SEP-3182 had it.
// It is a test fixture, not a gateway: no wallet, no meter, no auth beyond
// taking any bearer key.
package effectsrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/internal/vendorgw"
)

// Its tools, and how it spells refusals (data.reason is the contract).
const (
	ToolSend = "send_message"
	ToolList = "list_messages"
	// KeyArgument is the member of send_message's arguments holding the key.
	KeyArgument = "idempotency_key"
	// KeyParam is the member of the tools/call params holding the key
	// with Options.ParamsKey, as SEP-3182 named it.
	KeyParam = "idempotencyKey"

	ReasonKeyConflict = "msg_key_conflict" // same key, other message
	ReasonKeyMissing  = "msg_key_missing"  // a write without a key
	ReasonBadArgs     = "msg_bad_arguments"

	CodeKeyConflict = -32040
	CodeKeyMissing  = -32042
	CodeBadArgs     = jsonrpc.CodeInvalidParams
)

// Bugs are the ways it breaks idempotency; the zero value is correct.
type Bugs struct {
	// RetryWritesAgain: a retry with the key of a finished write writes the
	// message again (the key is checked for conflicts, never for replay).
	RetryWritesAgain bool
	// KeyTTL, when positive: a key is forgotten that long after its write,
	// so a retry that comes later writes again.
	KeyTTL time.Duration
	// LateRewrite, when positive: a replay answers correctly, then writes
	// the message again that long after (a background redelivery), too
	// late for the check made right after the retry.
	LateRewrite time.Duration
	// ParamsKeyIgnoredOn2026 (ParamsKey only): the params member is read
	// on protocol 2025-11-25 alone, the revision the server's key support
	// was written against; its 2026-07-28 path never looks for a key and
	// writes every call as a new message, so a retry writes again.
	ParamsKeyIgnoredOn2026 bool
}

// Options configure a server.
type Options struct {
	Addr string // default 127.0.0.1:0
	Bugs Bugs
	// UnkeyedReads is what becomes of a read without a key (in its
	// arguments at KeyArgument), as a metered gateway in front of the
	// server would treat an unkeyed call: ReadsRun (the zero value),
	// ReadsReplayed or ReadsRefused. Not a bug of the server: a gateway
	// may do either, and the harness's reads must see the effects anyway.
	UnkeyedReads ReadPolicy
	// ParamsKey: both tools read the key from the tools/call params member
	// KeyParam, never from their arguments, and the server is stateless,
	// serving 2025-11-25 and 2026-07-28 alike (a run negotiates the
	// later), as a server of the proposal's time would.
	ParamsKey bool
}

// ReadPolicy is what becomes of an unkeyed read.
type ReadPolicy int

const (
	// ReadsRun: an unkeyed read runs like any other.
	ReadsRun ReadPolicy = iota
	// ReadsReplayed: an unkeyed read is answered from the first read of
	// the same arguments, as a gateway with derived keys (unkeyed_policy
	// derived) replays an unkeyed call inside its window.
	ReadsReplayed
	// ReadsRefused: an unkeyed read is refused, as a gateway with
	// unkeyed_policy refuse refuses every unkeyed call.
	ReadsRefused
)

// Message is one effect of send_message.
type Message struct {
	ID      string `json:"id"`
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// record is what a key stands for: the message's arguments, what was
// answered, and when.
type record struct {
	fingerprint string
	result      *mcp.CallToolResult
	at          time.Time
}

// Server serves the two tools at /mcp.
type Server struct {
	o        Options
	key      vendorgw.KeyAt // where both tools read the key
	mu       sync.Mutex
	messages []Message
	keys     map[string]*record
	reads    map[string]*mcp.CallToolResult // ReadsReplayed: the first answer of each unkeyed read
	server   *mcp.Server
	srv      *http.Server
	ln       net.Listener
}

// Start listens and serves.
func Start(o Options) (*Server, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	s := &Server{o: o, keys: map[string]*record{}, reads: map[string]*mcp.CallToolResult{},
		key: vendorgw.KeyAt{Placement: vendorgw.KeyInArgument, Name: KeyArgument}}
	if o.ParamsKey {
		s.key = vendorgw.KeyAt{Placement: vendorgw.KeyInParams, Name: KeyParam}
	}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "effectsrv", Version: "1.0"},
		&mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	sendProps := map[string]any{"channel": map[string]any{"type": "string"}, "text": map[string]any{"type": "string"}}
	if !o.ParamsKey {
		sendProps[KeyArgument] = map[string]any{"type": "string"}
	}
	s.server.AddTool(&mcp.Tool{
		Name:        ToolSend,
		Description: "Send a message to a channel (the send is the effect). Idempotent by " + s.key.KeyName() + ".",
		InputSchema: map[string]any{"type": "object", "properties": sendProps},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)},
	}, s.send)
	s.server.AddTool(&mcp.Tool{
		Name:        ToolList,
		Description: "List the messages whose text contains a string.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"contains": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.list)
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("effectsrv: listen %s: %w", o.Addr, err)
	}
	s.ln = ln
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server },
		&mcp.StreamableHTTPOptions{Stateless: o.ParamsKey, JSONResponse: o.ParamsKey, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if o.ParamsKey {
		h = s.key.LiftParamsKey(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func ptr[T any](v T) *T { return &v }

// URL is the MCP endpoint.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/mcp" }

// Close stops serving.
func (s *Server) Close() error {
	err := s.srv.Close()
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
	if err != nil {
		return fmt.Errorf("effectsrv: close: %w", err)
	}
	return nil
}

// Messages are every message written so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// refuse is a JSON-RPC error go-sdk sends as it is, code and data kept.
func refuse(code int64, reason, format string, args ...any) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"reason": reason, "retryable": false})
	return &jsonrpc.Error{Code: code, Message: "effectsrv: " + fmt.Sprintf(format, args...), Data: data}
}

// send writes the message once per key: the first call of a key writes
// and stores its answer, a retry with the same message gets that answer
// back, a retry with another message is refused. One lock around the
// whole of it makes concurrent retries write once (a real server would
// hold a row lock or a unique key).
func (s *Server) send(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args map[string]any
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args == nil {
		return nil, refuse(CodeBadArgs, ReasonBadArgs, "arguments: want a JSON object")
	}
	key, raw, err := s.takeKey(req)
	if err != nil {
		return nil, err
	}
	if s.o.ParamsKey && s.o.Bugs.ParamsKeyIgnoredOn2026 && req.Extra != nil && req.Extra.Header.Get("Mcp-Protocol-Version") == "2026-07-28" { // BUG ParamsKeyIgnoredOn2026
		channel, _ := args["channel"].(string)
		text, _ := args["text"].(string)
		s.mu.Lock()
		defer s.mu.Unlock()
		return sent(s.write(channel, text)), nil
	}
	if key == "" {
		return nil, refuse(CodeKeyMissing, ReasonKeyMissing, "%s needs %s", ToolSend, s.where())
	}
	args = nil
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, refuse(CodeBadArgs, ReasonBadArgs, "arguments: %v", err)
	}
	// The fingerprint leaves the key out, as the harness's record does:
	// encoding/json sorts map keys, so one message has one fingerprint.
	fp, _ := json.Marshal(args)
	channel, _ := args["channel"].(string)
	text, _ := args["text"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if r := s.keys[key]; r != nil {
		expired := s.o.Bugs.KeyTTL > 0 && now.Sub(r.at) > s.o.Bugs.KeyTTL // BUG KeyTTL
		switch {
		case expired:
		case r.fingerprint != string(fp):
			return nil, refuse(CodeKeyConflict, ReasonKeyConflict, "key %q was used for another message", key)
		case !s.o.Bugs.RetryWritesAgain: // BUG RetryWritesAgain: the stored answer is never used
			if d := s.o.Bugs.LateRewrite; d > 0 { // BUG LateRewrite
				time.AfterFunc(d, func() {
					s.mu.Lock()
					defer s.mu.Unlock()
					s.write(channel, text)
				})
			}
			return r.result, nil
		}
	}
	res := sent(s.write(channel, text))
	s.keys[key] = &record{fingerprint: string(fp), result: res, at: now}
	return res, nil
}

// takeKey reads the call's one key where the server looks for it ("" for
// none) and the arguments without it.
func (s *Server) takeKey(req *mcp.CallToolRequest) (string, json.RawMessage, error) {
	keys, args, err := s.key.Take(req)
	switch {
	case err != nil:
		return "", nil, refuse(CodeBadArgs, ReasonBadArgs, "%s: %v", s.where(), err)
	case len(keys) > 1:
		return "", nil, refuse(CodeBadArgs, ReasonBadArgs, "%s: given %d times", s.where(), len(keys))
	case len(keys) == 0:
		return "", args, nil
	}
	return keys[0], args, nil
}

// where names the key's carrier in a refusal.
func (s *Server) where() string {
	if s.o.ParamsKey {
		return "params." + KeyParam
	}
	return KeyArgument + " in its arguments"
}

// sent is send_message's answer for the message it wrote.
func sent(m Message) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "sent " + m.ID}},
		StructuredContent: map[string]any{"message_id": m.ID},
	}
}

// write records one message, the effect; s.mu is held.
func (s *Server) write(channel, text string) Message {
	m := Message{ID: fmt.Sprintf("m-%d", len(s.messages)+1), Channel: channel, Text: text}
	s.messages = append(s.messages, m)
	return m
}

// list answers the messages whose text contains the argument.
func (s *Server) list(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	key, raw, err := s.takeKey(req)
	if err != nil {
		return nil, err
	}
	var args struct {
		Contains string `json:"contains"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, refuse(CodeBadArgs, ReasonBadArgs, "arguments: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == "" {
		switch s.o.UnkeyedReads {
		case ReadsRefused:
			return nil, refuse(CodeKeyMissing, ReasonKeyMissing, "%s needs %s", ToolList, s.where())
		case ReadsReplayed:
			if r := s.reads[args.Contains]; r != nil {
				return r, nil
			}
		}
	}
	out := []Message{}
	for _, m := range s.messages {
		if strings.Contains(m.Text, args.Contains) {
			out = append(out, m)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, errors.New("effectsrv: encode messages")
	}
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: map[string]any{"messages": out},
	}
	if key == "" && s.o.UnkeyedReads == ReadsReplayed {
		s.reads[args.Contains] = res
	}
	return res, nil
}
