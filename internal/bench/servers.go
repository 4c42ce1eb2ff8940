package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/reference/server"
)

// EchoTool is the tool both servers serve and every load phase but the
// read-only one calls.
const EchoTool = "partner.echo"

// NotesCountTool is the gateway's read-only local tool.
const NotesCountTool = "partner.notes.count"

// Baseline is a bare go-sdk MCP server: partner.echo, answered the way the
// gateway's local tool answers it (the arguments as text and as
// structuredContent), with no authentication, store or metering.
type Baseline struct {
	URL string
	srv *http.Server
}

// StartBaseline serves the bare server on 127.0.0.1 with the go-sdk's
// Streamable HTTP handler, stateless with JSON responses, as the reference
// gateway serves 2026-07-28.
func StartBaseline() (*Baseline, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpbench-baseline", Version: "1"},
		&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{
		Name:        EchoTool,
		Description: "Echoes its arguments back (structuredContent is the arguments object).",
		InputSchema: map[string]any{"type": "object", "additionalProperties": true},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := string(req.Params.Arguments)
		if text == "" {
			text = "{}"
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: json.RawMessage(text),
		}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("baseline: listen: %w", err)
	}
	b := &Baseline{URL: "http://" + ln.Addr().String() + "/mcp",
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// Close stops the bare server.
func (b *Baseline) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.srv.Shutdown(ctx)
}

// Gateway is the reference gateway run in process by server.Run.
type Gateway struct {
	Base    string // http://127.0.0.1:PORT
	URL     string // Base + "/mcp"
	Control *control.Client
	cancel  context.CancelFunc
	done    chan error
}

// StartGateway runs the reference gateway on store (server.Config.Store:
// "sqlite:PATH" or a PostgreSQL URL) on 127.0.0.1:0 with a fresh control
// token, and waits until it listens.
func StartGateway(ctx context.Context, store string) (*Gateway, error) {
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	out := &lines{ch: make(chan string, 64)}
	g := &Gateway{cancel: cancel, done: make(chan error, 1)}
	go func() {
		g.done <- server.Run(rctx, server.Config{Addr: "127.0.0.1:0", Store: store, ControlToken: token}, out)
	}()
	timeout := time.After(60 * time.Second)
	for g.Base == "" {
		select {
		case l := <-out.ch:
			if a, ok := strings.CutPrefix(l, "listening on "); ok {
				g.Base = strings.TrimSpace(a)
			}
		case err := <-g.done:
			cancel()
			return nil, fmt.Errorf("reference gateway stopped before listening: %w", err)
		case <-timeout:
			cancel()
			return nil, errors.New("reference gateway did not listen within 60s")
		}
	}
	g.URL = g.Base + "/mcp"
	g.Control = &control.Client{BaseURL: g.Base + "/control", Token: token}
	return g, nil
}

// Endpoint is where a load phase sends its calls: one gateway, or several
// gateway processes on one store (worker w calls URLs[w % len(URLs)]).
type Endpoint struct {
	URLs    []string
	Control *control.Client
}

// Endpoint is the gateway as a load phase's endpoint.
func (g *Gateway) Endpoint() Endpoint {
	return Endpoint{URLs: []string{g.URL}, Control: g.Control}
}

// Fixture creates a wallet with balance and an API key for it.
func (e Endpoint) Fixture(ctx context.Context, balance int64) (walletID, apiKey string, err error) {
	w, err := e.Control.CreateWallet(ctx, balance)
	if err != nil {
		return "", "", err
	}
	k, err := e.Control.CreateKey(ctx, w.WalletID)
	if err != nil {
		return "", "", err
	}
	return w.WalletID, k.APIKey, nil
}

// Close stops the gateway and waits for it.
func (g *Gateway) Close() error {
	g.cancel()
	select {
	case err := <-g.done:
		return err
	case <-time.After(server.ShutdownTimeout + 5*time.Second):
		return errors.New("reference gateway did not stop")
	}
}

// lines is the gateway's stdout, handed on line by line; lines nobody reads
// are dropped.
type lines struct {
	mu   sync.Mutex
	part []byte
	ch   chan string
}

func (w *lines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		select {
		case w.ch <- string(w.part[:i]):
		default:
		}
		w.part = w.part[i+1:]
	}
	return len(p), nil
}
