package tools

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/relay"
	"github.com/mcpconform/mcpconform/reference/store"
)

// The registered servers' prompts, resources, resource templates,
// subscriptions and completion are relayed as the servers offer them, never
// metered (only tools/call is). Prompts take the server's prefix, as its
// tools do; resource URIs and templates are the server's own. A relayed list
// is every registered server's list, whole, in one page.

// Relay is a registered server as the relay talks to it.
type relayed struct {
	sv   store.Server
	sess *mcp.ClientSession
	caps *mcp.ServerCapabilities
}

// routes remembers which server listed a prompt, a resource or a template,
// so that a get, read or completion goes to it.
type routes struct {
	mu        sync.Mutex
	prompts   map[string]route // gateway prompt name -> server
	resources map[string]string
	templates map[string]string
	subs      map[string]int // resource URI -> subscribed clients
	// updated is told of an upstream's notifications/resources/updated.
	updated func(context.Context, *mcp.ResourceUpdatedNotificationParams)
	// changed is told when a registered server's prompts or resources
	// changed (relay.PromptsListChanged, relay.ResourcesListChanged).
	changed func(ctx context.Context, method string)
}

type route struct {
	url, name string // the server and the prompt's name there
}

func (r *routes) set(f func(*routes)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prompts == nil {
		r.prompts, r.resources, r.templates, r.subs = map[string]route{}, map[string]string{}, map[string]string{}, map[string]int{}
	}
	f(r)
}

// OnResourceUpdated sets where an upstream's notifications/resources/updated
// go (the gateway's MCP server, which tells the subscribed clients).
func (d *Dispatcher) OnResourceUpdated(f func(context.Context, *mcp.ResourceUpdatedNotificationParams)) {
	d.routes.set(func(r *routes) { r.updated = f })
}

func (d *Dispatcher) resourceUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	var f func(context.Context, *mcp.ResourceUpdatedNotificationParams)
	d.routes.set(func(r *routes) { f = r.updated })
	if f != nil && req.Params != nil {
		f(ctx, req.Params)
	}
}

// OnListChanged sets where a registered server's prompts and resources
// list changes go (the gateway's MCP server, which tells its clients);
// method is relay.PromptsListChanged or relay.ResourcesListChanged.
func (d *Dispatcher) OnListChanged(f func(ctx context.Context, method string)) {
	d.routes.set(func(r *routes) { r.changed = f })
}

// listChanged is the upstream client's handler for a server's
// notifications/prompts/list_changed and notifications/resources/list_changed.
// The routes learnt from the server's old list are dropped first: a name or
// URI it no longer lists is not sent to it, and the next get, read or
// completion lists again. Only a registered server's lists are relayed, so
// an upstream of tools alone has nothing to pass on.
func (d *Dispatcher) listChanged(ctx context.Context, cs *mcp.ClientSession, method string) {
	url, ok := d.urlOf(cs)
	if !ok {
		return
	}
	if _, registered, err := d.serverAt(ctx, url); err != nil || !registered {
		if err != nil {
			d.log.Warn("upstream list changed: registered servers", "url", url, "err", err)
		}
		return
	}
	var f func(context.Context, string)
	d.routes.set(func(r *routes) {
		switch method {
		case relay.PromptsListChanged:
			maps.DeleteFunc(r.prompts, func(_ string, rt route) bool { return rt.url == url })
		case relay.ResourcesListChanged:
			fromURL := func(_, u string) bool { return u == url }
			maps.DeleteFunc(r.resources, fromURL)
			maps.DeleteFunc(r.templates, fromURL)
		}
		f = r.changed
	})
	if f != nil {
		f(ctx, method)
	}
}

// relayedServers connects to every registered server; one that cannot be
// reached is left out (and so is what it would serve).
func (d *Dispatcher) relayedServers(ctx context.Context) ([]relayed, error) {
	svs, err := d.store.Servers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]relayed, 0, len(svs))
	for _, sv := range svs {
		sess, err := d.session(ctx, sv.URL)
		if err != nil {
			d.log.Warn("upstream server unreachable", "server", sv.Name, "url", sv.URL, "err", err)
			continue
		}
		caps := &mcp.ServerCapabilities{}
		if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil {
			caps = ir.Capabilities
		}
		out = append(out, relayed{sv, sess, caps})
	}
	return out, nil
}

// Capabilities is what the gateway serves: tools, and logging (an upstream
// tool's log messages are relayed to the caller, at the level it set),
// always; of the rest exactly what it relays from the registered servers
// that answer now. Prompts and resources declare listChanged when a server
// that offers them does: its list-changed notifications are passed on.
func (d *Dispatcher) Capabilities(ctx context.Context) *mcp.ServerCapabilities {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}}
	rs, err := d.relayedServers(ctx)
	if err != nil {
		d.log.Error("capabilities: registered servers", "err", err)
		return caps
	}
	for _, r := range rs {
		if r.caps.Prompts != nil {
			if caps.Prompts == nil {
				caps.Prompts = &mcp.PromptCapabilities{}
			}
			caps.Prompts.ListChanged = caps.Prompts.ListChanged || r.caps.Prompts.ListChanged
		}
		if r.caps.Resources != nil {
			if caps.Resources == nil {
				caps.Resources = &mcp.ResourceCapabilities{}
			}
			caps.Resources.Subscribe = caps.Resources.Subscribe || r.caps.Resources.Subscribe
			caps.Resources.ListChanged = caps.Resources.ListChanged || r.caps.Resources.ListChanged
		}
		if r.caps.Completions != nil {
			caps.Completions = &mcp.CompletionCapabilities{}
		}
	}
	return caps
}

// private is the cacheability of a relayed list: what the gateway lists
// may differ from one caller to the next, as tools/list does.
var private = mcp.Cacheable{CacheScope: "private"}

// gather lists one kind of item of every registered server that offers it
// (has), each item taken by keep (which renames it, and notes its route).
func gather[T any](ctx context.Context, d *Dispatcher, has func(*mcp.ServerCapabilities) bool,
	list func(context.Context, *mcp.ClientSession) iter.Seq2[T, error], keep func(relayed, T) T) ([]T, error) {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	rs, err := d.relayedServers(ctx)
	if err != nil {
		return nil, err
	}
	out := []T{}
	for _, r := range rs {
		if !has(r.caps) {
			continue
		}
		for item, err := range list(ctx, r.sess) {
			if err != nil {
				return nil, upstreamErr(r.sv, err)
			}
			out = append(out, keep(r, item))
		}
	}
	return out, nil
}

// ListPrompts lists every server's prompts, each named with its server's prefix.
func (d *Dispatcher) ListPrompts(ctx context.Context) (*mcp.ListPromptsResult, error) {
	ps, err := gather(ctx, d, func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil },
		func(ctx context.Context, s *mcp.ClientSession) iter.Seq2[*mcp.Prompt, error] {
			return s.Prompts(ctx, nil)
		},
		func(r relayed, p *mcp.Prompt) *mcp.Prompt {
			q := *p
			q.Name = r.sv.Prefix + p.Name
			d.routes.set(func(rt *routes) { rt.prompts[q.Name] = route{r.sv.URL, p.Name} })
			return &q
		})
	return &mcp.ListPromptsResult{Prompts: ps, Cacheable: private}, err
}

// GetPrompt gets a prompt from the server that lists it.
func (d *Dispatcher) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	rt, ok := d.promptRoute(p.Name)
	if !ok {
		if _, err := d.ListPrompts(ctx); err != nil {
			return nil, err
		}
		if rt, ok = d.promptRoute(p.Name); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", p.Name)}
		}
	}
	sess, err := d.session(ctx, rt.url)
	if err != nil {
		return nil, err
	}
	q := *p
	q.Name, q.Meta = rt.name, relayMeta(p.Meta)
	return sess.GetPrompt(ctx, &q)
}

func (d *Dispatcher) promptRoute(name string) (route, bool) {
	var rt route
	var ok bool
	d.routes.set(func(r *routes) { rt, ok = r.prompts[name] })
	return rt, ok
}

// ListResources lists every server's resources.
func (d *Dispatcher) ListResources(ctx context.Context) (*mcp.ListResourcesResult, error) {
	rs, err := gather(ctx, d, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil },
		func(ctx context.Context, s *mcp.ClientSession) iter.Seq2[*mcp.Resource, error] {
			return s.Resources(ctx, nil)
		},
		func(r relayed, res *mcp.Resource) *mcp.Resource {
			d.routes.set(func(rt *routes) { rt.resources[res.URI] = r.sv.URL })
			return res
		})
	return &mcp.ListResourcesResult{Resources: rs, Cacheable: private}, err
}

// ListResourceTemplates lists every server's resource templates.
func (d *Dispatcher) ListResourceTemplates(ctx context.Context) (*mcp.ListResourceTemplatesResult, error) {
	ts, err := gather(ctx, d, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil },
		func(ctx context.Context, s *mcp.ClientSession) iter.Seq2[*mcp.ResourceTemplate, error] {
			return s.ResourceTemplates(ctx, nil)
		},
		func(r relayed, tpl *mcp.ResourceTemplate) *mcp.ResourceTemplate {
			d.routes.set(func(rt *routes) { rt.templates[tpl.URITemplate] = r.sv.URL })
			return tpl
		})
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: ts, Cacheable: private}, err
}

// resourceServers are the servers to ask about uri: the one that listed it,
// else every server that serves resources (a templated URI is listed by
// none), in name order.
func (d *Dispatcher) resourceServers(ctx context.Context, uri string) ([]relayed, error) {
	rs, err := d.relayedServers(ctx)
	if err != nil {
		return nil, err
	}
	var url string
	d.routes.set(func(r *routes) { url = r.resources[uri] })
	var out []relayed
	for _, r := range rs {
		if r.caps.Resources != nil && (url == "" || r.sv.URL == url) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ReadResource reads uri from the server that has it: the first one to
// answer without an error.
func (d *Dispatcher) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	rs, err := d.resourceServers(ctx, p.URI)
	if err != nil {
		return nil, err
	}
	last := error(&jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("resource %q not found", p.URI)})
	q := *p
	q.Meta = relayMeta(p.Meta)
	for _, r := range rs {
		res, err := r.sess.ReadResource(ctx, &q)
		if err == nil {
			d.routes.set(func(rt *routes) { rt.resources[p.URI] = r.sv.URL })
			return res, nil
		}
		last = err
	}
	return nil, last
}

// Subscribe subscribes the gateway to uri at its server, once however many
// clients subscribe.
func (d *Dispatcher) Subscribe(ctx context.Context, p *mcp.SubscribeParams) error {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	rs, err := d.resourceServers(ctx, p.URI)
	if err != nil {
		return err
	}
	var first bool
	d.routes.set(func(r *routes) { first = r.subs[p.URI] == 0 })
	// A 2026-07-28 client subscribes by subscriptions/listen, whose _meta
	// the SDK hands on here: its protocol's entries are not the upstream's.
	p = &mcp.SubscribeParams{URI: p.URI, Meta: relayMeta(p.Meta)}
	if first {
		var last error = &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("resource %q not found", p.URI)}
		done := false
		for _, r := range rs {
			if r.caps.Resources == nil || !r.caps.Resources.Subscribe {
				continue
			}
			if last = r.sess.Subscribe(ctx, p); last == nil {
				done = true
				break
			}
		}
		if !done {
			return last
		}
	}
	d.routes.set(func(r *routes) { r.subs[p.URI]++ })
	return nil
}

// Unsubscribe drops a client's subscription, and the gateway's at the
// server with the last one.
func (d *Dispatcher) Unsubscribe(ctx context.Context, p *mcp.UnsubscribeParams) error {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	var last bool
	d.routes.set(func(r *routes) {
		if r.subs[p.URI] > 0 {
			r.subs[p.URI]--
			last = r.subs[p.URI] == 0
		}
	})
	if !last {
		return nil
	}
	rs, err := d.resourceServers(ctx, p.URI)
	if err != nil {
		return err
	}
	q := &mcp.UnsubscribeParams{URI: p.URI, Meta: relayMeta(p.Meta)} // see Subscribe
	for _, r := range rs {
		if r.caps.Resources != nil && r.caps.Resources.Subscribe {
			_ = r.sess.Unsubscribe(ctx, q) // a server not subscribed refuses; nothing to undo
		}
	}
	return nil
}

// Complete asks the server of the prompt or template named by the reference.
func (d *Dispatcher) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	ctx, cancel := own(ctx) // see own
	defer cancel()
	if p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs ref"}
	}
	q := *p
	q.Meta = relayMeta(p.Meta)
	var url string
	switch p.Ref.Type {
	case "ref/prompt":
		rt, ok := d.promptRoute(p.Ref.Name)
		if !ok {
			if _, err := d.ListPrompts(ctx); err != nil {
				return nil, err
			}
			rt, ok = d.promptRoute(p.Ref.Name)
		}
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", p.Ref.Name)}
		}
		ref := *p.Ref
		ref.Name = rt.name
		q.Ref, url = &ref, rt.url
	case "ref/resource":
		d.routes.set(func(r *routes) { url = r.templates[p.Ref.URI] })
		if url == "" {
			if _, err := d.ListResourceTemplates(ctx); err != nil {
				return nil, err
			}
			d.routes.set(func(r *routes) { url = r.templates[p.Ref.URI] })
		}
		if url == "" {
			d.routes.set(func(r *routes) { url = r.resources[p.Ref.URI] })
		}
		if url == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", p.Ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", p.Ref.Type)}
	}
	sess, err := d.session(ctx, url)
	if err != nil {
		return nil, err
	}
	if ir := sess.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	return sess.Complete(ctx, &q)
}

// relayMeta is the _meta of a relayed request without the protocol's own
// entries: those describe the client's request to the gateway, and the
// upstream session has a protocol version of its own.
func relayMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// upstreamErr keeps an upstream's JSON-RPC error as it is (the client is
// owed the server's own answer) and names the server in anything else.
func upstreamErr(sv store.Server, err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && hasUpstreamRPCError(err) {
		return rpc
	}
	return fmt.Errorf("upstream server %s: %w", sv.Name, err)
}
