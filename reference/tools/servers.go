package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpconform/mcpconform/reference/store"
)

// ErrUpstream wraps the failure to reach or list a server being registered.
var ErrUpstream = errors.New("upstream server unavailable")

// RegisterServer registers an upstream MCP server whole: each tool of its
// tools/list becomes a registry tool named s.Prefix + its name and priced by
// the server's rule, and its prompts, resources and completion are relayed
// (relay.go). Registering a server again replaces its rule and brings its
// tool list up to date. A tool name already taken by a tool of another
// upstream is store.ErrExists, before anything is written.
func (d *Dispatcher) RegisterServer(ctx context.Context, s store.Server) ([]store.Tool, error) {
	d.listings.drop(s.URL) // the server as it is now, not as it was
	ls, err := d.upstreamListing(ctx, s.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	want, gone, err := d.plan(ctx, s, ls)
	if err != nil {
		return nil, err
	}
	if err := d.store.PutServer(ctx, s); err != nil {
		return nil, err
	}
	return want, d.apply(ctx, want, gone)
}

// RemoveServer removes a server and the tools it registered; their stored
// outcomes stay (a retry of a call already made still replays).
func (d *Dispatcher) RemoveServer(ctx context.Context, name string) error {
	sv, err := d.server(ctx, name)
	if err != nil {
		return err
	}
	if err := d.store.RemoveServer(ctx, name); err != nil {
		return err
	}
	ts, err := d.store.Tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.UpstreamURL == sv.URL {
			if err := d.store.RemoveTool(ctx, t.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	d.forget(sv.URL)
	return nil
}

func (d *Dispatcher) server(ctx context.Context, name string) (store.Server, error) {
	svs, err := d.store.Servers(ctx)
	if err != nil {
		return store.Server{}, err
	}
	for _, sv := range svs {
		if sv.Name == name {
			return sv, nil
		}
	}
	return store.Server{}, fmt.Errorf("server %q: %w", name, store.ErrNotFound)
}

// serverAt is the registered server at url, if any.
func (d *Dispatcher) serverAt(ctx context.Context, url string) (store.Server, bool, error) {
	svs, err := d.store.Servers(ctx)
	if err != nil {
		return store.Server{}, false, err
	}
	for _, sv := range svs {
		if sv.URL == url {
			return sv, true, nil
		}
	}
	return store.Server{}, false, nil
}

// plan is what makes the registry hold exactly ls's tools for s: the tools
// to put (new ones at the rule's price, the others re-priced) and the names
// to remove (tools the server no longer lists).
func (d *Dispatcher) plan(ctx context.Context, s store.Server, ls listing) (want []store.Tool, gone []string, err error) {
	ts, err := d.store.Tools(ctx)
	if err != nil {
		return nil, nil, err
	}
	mine := map[string]store.Tool{}
	for _, t := range ts {
		if t.UpstreamURL == s.URL {
			mine[t.Name] = t
		}
	}
	for name := range ls {
		t := store.Tool{Name: s.Prefix + name, Price: s.Price, UpstreamURL: s.URL, UpstreamTool: name,
			ReadOnly: slices.Contains(s.ReadOnly, name)}
		if p, ok := s.Prices[name]; ok {
			t.Price = p
		}
		if old, ok := mine[t.Name]; ok {
			// What the operator set on the tool itself stays.
			t.Description, t.Approval, t.Overrides = old.Description, old.Approval, old.Overrides
		} else if cur, err := d.store.Tool(ctx, t.Name); err == nil && !cur.Removed {
			return nil, nil, fmt.Errorf("tool %q is registered already (upstream %q): %w", t.Name, cur.UpstreamURL, store.ErrExists)
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
		want = append(want, t)
		delete(mine, t.Name)
	}
	slices.SortFunc(want, func(a, b store.Tool) int { return strings.Compare(a.Name, b.Name) })
	for name := range mine {
		gone = append(gone, name)
	}
	return want, gone, nil
}

func (d *Dispatcher) apply(ctx context.Context, want []store.Tool, gone []string) error {
	for _, t := range want {
		if err := d.store.PutTool(ctx, t); err != nil {
			return err
		}
	}
	for _, name := range gone {
		if err := d.store.RemoveTool(ctx, name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// resync brings a registered server's tools up to date after its list
// changed; an upstream that is not a registered server has nothing to sync.
func (d *Dispatcher) resync(ctx context.Context, url string) error {
	sv, ok, err := d.serverAt(ctx, url)
	if err != nil || !ok {
		return err
	}
	ls, err := d.upstreamListing(ctx, url)
	if err != nil {
		return err
	}
	want, gone, err := d.plan(ctx, sv, ls)
	if err != nil {
		return err
	}
	return d.apply(ctx, want, gone)
}
