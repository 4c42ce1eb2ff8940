package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpconform/mcpconform/reference/store"
)

// An upstream tool is shown as its upstream lists it: title, description,
// input and output schema (as the upstream wrote them, every JSON Schema
// keyword kept), annotations, icons and _meta. What the operator registered
// replaces parts of it: a non-empty description, store.Tool.Overrides, and
// the read_only flag as readOnlyHint, since that flag, not the upstream's
// hint, decides how the gateway meters the tool.
//
// Each upstream's tools/list is fetched once and kept until the upstream
// says its list changed (notifications/tools/list_changed) or its session is
// dropped; an upstream that cannot be reached is asked again on a
// tools/list some seconds later (retryListing), and meanwhile its tools are
// shown with what the registry knows.

// listing is one upstream's tools by name; nil until fetched.
type listing map[string]*mcp.Tool

// listings caches the upstreams' tools/list answers by URL.
type listings struct {
	mu    sync.Mutex
	byURL map[string]listing
	// failed holds when listing an upstream last failed: it is not asked
	// again for retryListing, so an unreachable upstream does not hold up
	// every tools/list for a connect timeout.
	failed map[string]time.Time
	// changed, if set, is called once an upstream's list was dropped
	// because it said it changed, and its server's tools synced (tests
	// wait on it).
	changed func(url string)
}

func (l *listings) get(url string) (listing, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.byURL[url]
	return ls, ok
}

func (l *listings) put(url string, ls listing) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byURL == nil {
		l.byURL = map[string]listing{}
	}
	l.byURL[url] = ls
}

func (l *listings) drop(url string) {
	l.mu.Lock()
	delete(l.byURL, url)
	delete(l.failed, url)
	l.mu.Unlock()
}

// retryListing is how long an upstream whose tools/list failed is left alone.
const retryListing = 15 * time.Second

func (l *listings) fail(url string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = map[string]time.Time{}
	}
	l.failed[url] = time.Now()
}

func (l *listings) recentlyFailed(url string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.failed[url]
	return ok && time.Since(at) < retryListing
}

// toolListChanged is the upstream client's handler for
// notifications/tools/list_changed.
func (d *Dispatcher) toolListChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	url, ok := d.urlOf(req.Session)
	if !ok {
		return
	}
	d.listings.drop(url)
	// A registered server's tools follow its list. Not in the handler's
	// goroutine: the sync lists the upstream's tools over the same session.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d.opts.ConnectTimeout)
		defer cancel()
		if err := d.resync(ctx, url); err != nil {
			d.log.Warn("upstream tools changed: sync", "url", url, "err", err)
		}
		if f := d.listings.changed; f != nil {
			f(url)
		}
	}()
}

// urlOf names the upstream a session belongs to.
func (d *Dispatcher) urlOf(cs *mcp.ClientSession) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for url, u := range d.sessions {
		u.mu.Lock()
		same := u.sess == cs
		u.mu.Unlock()
		if same {
			return url, true
		}
	}
	return "", false
}

// upstreamListing returns url's tools, fetching them if they are not cached.
func (d *Dispatcher) upstreamListing(ctx context.Context, url string) (listing, error) {
	if ls, ok := d.listings.get(url); ok {
		return ls, nil
	}
	if d.listings.recentlyFailed(url) {
		return nil, fmt.Errorf("upstream %s: its tools/list failed less than %v ago", url, retryListing)
	}
	ls, err := d.fetchListing(ctx, url)
	if err != nil {
		d.listings.fail(url)
		return nil, err
	}
	d.listings.put(url, ls)
	return ls, nil
}

func (d *Dispatcher) fetchListing(ctx context.Context, url string) (listing, error) {
	sess, err := d.session(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: connect: %w", url, err)
	}
	cctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
	defer cancel()
	ls := listing{}
	for t, err := range sess.Tools(cctx, nil) {
		if err != nil {
			if classify(err) != refused {
				d.evict(url, sess)
			}
			return nil, fmt.Errorf("upstream %s: tools/list: %w", url, err)
		}
		ls[t.Name] = t
	}
	return ls, nil
}

// upstreamListings fetches the listings of urls concurrently; an upstream
// that fails is logged and left out.
func (d *Dispatcher) upstreamListings(ctx context.Context, urls map[string]bool) map[string]listing {
	out := make(map[string]listing, len(urls))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, err := d.upstreamListing(ctx, url)
			if err != nil {
				d.log.Warn("upstream tools/list", "url", url, "err", err)
				return
			}
			mu.Lock()
			out[url] = ls
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// overrides is store.Tool.Overrides decoded.
type overrides struct {
	Title        *string          `json:"title"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema"`
	Annotations  *json.RawMessage `json:"annotations"`
}

// upstreamEntry is t's tools/list entry: the upstream's (up, nil when it is
// not known) under what the operator registered.
func upstreamEntry(t store.Tool, up *mcp.Tool) (*mcp.Tool, error) {
	out := &mcp.Tool{Name: t.Name, InputSchema: map[string]any{"type": "object"}}
	if up != nil {
		out.Title, out.Description, out.Icons = up.Title, up.Description, up.Icons
		if up.InputSchema != nil {
			out.InputSchema = up.InputSchema
		}
		out.OutputSchema = up.OutputSchema
		if up.Annotations != nil {
			a := *up.Annotations
			out.Annotations = &a
		}
		out.Meta = maps.Clone(up.Meta)
	}
	if t.Description != "" {
		out.Description = t.Description
	}
	var o overrides
	if len(t.Overrides) > 0 {
		if err := json.Unmarshal(t.Overrides, &o); err != nil {
			return nil, fmt.Errorf("tool %s: overrides: %w", t.Name, err)
		}
	}
	if o.Title != nil {
		out.Title = *o.Title
	}
	if o.InputSchema != nil {
		out.InputSchema = o.InputSchema
	}
	if o.OutputSchema != nil {
		out.OutputSchema = o.OutputSchema
	}
	if o.Annotations != nil {
		var a mcp.ToolAnnotations
		if err := json.Unmarshal(*o.Annotations, &a); err != nil {
			return nil, fmt.Errorf("tool %s: annotations: %w", t.Name, err)
		}
		out.Annotations = &a
	}
	if out.Annotations == nil {
		out.Annotations = &mcp.ToolAnnotations{}
	}
	out.Annotations.ReadOnlyHint = t.ReadOnly
	return out, nil
}
