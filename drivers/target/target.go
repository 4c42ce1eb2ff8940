// Package target selects what the harness tests: the reference gateway,
// started as child processes (`--target reference`), or any gateway URL
// described by a profile (`--target URL --profile FILE`). It speaks to the
// reference only over the wire, like to any other gateway.
package target

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/mcpconform/mcpconform/drivers/control"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/reports"
)

// Target is a gateway under test.
type Target struct {
	Kind string // "reference" or "url"
	// URLs are the MCP endpoints, one per gateway process.
	URLs []string
	// ControlURLs are the control API prefixes (".../control"): one per URL
	// for the reference (clock and faults are per process), the profile's
	// one for an external gateway, none without a control API.
	ControlURLs  []string
	ControlToken string
	Profile      *Profile
	Store        string   // reference only: "sqlite" or "postgres"
	Bugs         []string // reference only: bug switches it runs with

	mu       sync.Mutex // procs[i] as a crashed worker's restart replaces it; closed
	closed   bool
	procs    []*proc
	opts     Options // reference only: how the workers were started (Restart)
	storeArg string  // reference only: the --store argument
	stateDir string  // removed on Close when owned
	owned    bool
	once     sync.Once
	closeErr error
}

// External is a gateway described by a profile; url (from --target), when
// given, comes first and the profile's urls follow.
func External(url string, p *Profile) (*Target, error) {
	if p == nil {
		return nil, errors.New("external target: no profile")
	}
	var urls []string
	if url != "" {
		if err := checkURL(url); err != nil {
			return nil, fmt.Errorf("external target: %w", err)
		}
		urls = append(urls, url)
	}
	for _, u := range p.URLs {
		// The profile's URL spelled another way (localhost for 127.0.0.1,
		// a default port, a trailing slash) is the same gateway, not a
		// second URL: a second URL would claim the two-urls capability.
		if !slices.ContainsFunc(urls, func(v string) bool { return sameEndpoint(u, v) }) {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, errors.New("external target: no URL (give --target URL or the profile's urls)")
	}
	t := &Target{Kind: "url", URLs: urls, Profile: p, ControlToken: p.ControlToken}
	if p.ControlURL != "" {
		t.ControlURLs = []string{p.ControlURL}
	}
	return t, nil
}

// SameEndpoint reports whether two URLs name one endpoint, as External
// decides it (see sameEndpoint).
func SameEndpoint(a, b string) bool { return sameEndpoint(a, b) }

// sameEndpoint reports whether two URLs name one endpoint: the same
// scheme, host (localhost, 127.0.0.1 and ::1 are one loopback), port (a
// scheme's default written or not) and path (a trailing slash aside).
func sameEndpoint(a, b string) bool {
	key := func(raw string) string {
		u, err := neturl.Parse(raw)
		if err != nil {
			return raw
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		if host == "localhost" || host == "::1" {
			host = "127.0.0.1"
		}
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
		}
		return strings.ToLower(u.Scheme) + "://" + host + ":" + port + strings.TrimSuffix(u.EscapedPath(), "/") + "?" + u.RawQuery
	}
	return key(a) == key(b)
}

// Wire is a client for gateway i (modulo the number of URLs), configured
// by the profile.
func (t *Target) Wire(i int) *wire.Client {
	return t.Profile.Client(t.URLs[i%len(t.URLs)])
}

// Control is the control API client for gateway i, nil without one.
func (t *Target) Control(i int) *control.Client {
	if len(t.ControlURLs) == 0 {
		return nil
	}
	return &control.Client{BaseURL: t.ControlURLs[i%len(t.ControlURLs)], Token: t.ControlToken}
}

// ResolveCapabilities is the profile's list, or else what the control API
// answers (and the profile then remembers it). No control API and no list
// means no capabilities: such scenarios are skipped, never passed.
func (t *Target) ResolveCapabilities(ctx context.Context) ([]string, error) {
	if len(t.Profile.Capabilities) > 0 || len(t.ControlURLs) == 0 {
		caps := slices.Clone(t.Profile.Capabilities)
		switch {
		case t.Profile.Effects != nil:
			// The write tool is the effect; its read tool observes it.
			if !slices.Contains(caps, CapEffects) {
				caps = append(caps, CapEffects)
			}
		case t.Profile.UpstreamTool != "" && !slices.Contains(caps, control.CapUpstream):
			caps = append(caps, control.CapUpstream)
		}
		return caps, nil
	}
	c, err := t.Control(0).Capabilities(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve capabilities: %w", err)
	}
	t.Profile.Capabilities = c.Capabilities
	return slices.Clone(c.Capabilities), nil
}

// Report describes the target for summary.json.
func (t *Target) Report() reports.Target {
	return reports.Target{
		Kind: t.Kind, URLs: t.URLs, Store: t.Store, Bugs: t.Bugs,
		Capabilities: slices.Clone(t.Profile.Capabilities),
	}
}

// LogTail is the last output of reference worker i, "" for other targets.
func (t *Target) LogTail(i int) string {
	if i < 0 || i >= len(t.procs) {
		return ""
	}
	return t.proc(i).tail.String()
}

// Close stops the reference's processes (SIGTERM, then SIGKILL after the
// stop timeout) and removes a state directory it created. External targets
// have nothing to stop.
func (t *Target) Close() error {
	t.once.Do(func() {
		var errs []error
		t.mu.Lock()
		t.closed = true
		procs := slices.Clone(t.procs)
		t.mu.Unlock()
		for i, p := range procs {
			if err := p.stop(); err != nil {
				errs = append(errs, fmt.Errorf("gateway worker %d: %w", i, err))
			}
		}
		if t.owned && t.stateDir != "" {
			if err := os.RemoveAll(t.stateDir); err != nil {
				errs = append(errs, fmt.Errorf("remove state dir: %w", err))
			}
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}
