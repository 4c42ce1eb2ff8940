// Package relay carries, in a tools/call's context, what the gateway may
// tell and ask the calling client while the call runs: an upstream's
// progress and log messages, and its sampling and elicitation requests. The
// wire layer puts it there; the dispatcher of upstream tools uses it. The
// gateway core only passes the context on: none of it is metered, and none of
// it is stored with the call's outcome.
package relay

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client is the calling client as far as it can be reached during the call.
// A nil function is something the client cannot receive: it sent no
// progressToken, set no log level, or did not declare the capability.
type Client struct {
	Progress      func(ctx context.Context, p *mcp.ProgressNotificationParams) error // ProgressToken is filled in
	ProgressToken any                                                                // the client's, when Progress is set
	Log           func(ctx context.Context, p *mcp.LoggingMessageParams) error
	LogLevel      mcp.LoggingLevel // the client's level when Log is set
	CreateMessage func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit        func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// MultiRound is set when the client speaks 2026-07-28: an upstream's
	// input-required result goes back to it as it is, for it to answer in
	// the call's next round.
	MultiRound bool
	// Capabilities are the client capabilities a 2026-07-28 request
	// declared in its _meta, as sent; nil otherwise. The upstream call
	// declares them in turn: an upstream decides what it may ask of the
	// caller by them (an input-required result asking for sampling only if
	// the caller can sample).
	Capabilities any
}

// Wants reports whether anything can be relayed to c.
func (c *Client) Wants() bool {
	return c != nil && (c.Progress != nil || c.Log != nil || c.CreateMessage != nil || c.Elicit != nil)
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Client) context.Context { return context.WithValue(ctx, key{}, c) }

// From returns the client ctx carries, or nil.
func From(ctx context.Context) *Client {
	c, _ := ctx.Value(key{}).(*Client)
	return c
}

// Round is what a 2026-07-28 client sends in a call's later round: its
// answers to the input the upstream asked for, and the upstream's state.
// It travels beside the call, not in its arguments: every round of a
// multi-round call has the same arguments, and so the same fingerprint.
type Round struct {
	InputResponses mcp.InputResponseMap
	RequestState   string
}

type roundKey struct{}

// WithRound returns ctx carrying r.
func WithRound(ctx context.Context, r *Round) context.Context {
	return context.WithValue(ctx, roundKey{}, r)
}

// RoundFrom returns the round ctx carries, or nil (a call's first round).
func RoundFrom(ctx context.Context) *Round {
	r, _ := ctx.Value(roundKey{}).(*Round)
	return r
}

// The list-changed notifications of the registered servers that the gateway
// passes on to its own clients (their lists are part of the gateway's).
const (
	PromptsListChanged   = "notifications/prompts/list_changed"
	ResourcesListChanged = "notifications/resources/list_changed"
)
