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
	Log           func(ctx context.Context, p *mcp.LoggingMessageParams) error
	LogLevel      mcp.LoggingLevel // the client's level when Log is set
	CreateMessage func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit        func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
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
