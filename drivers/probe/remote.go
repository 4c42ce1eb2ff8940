package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Remote is a probe another process serves (`mcpconform probe`), observed
// over its observation API. Its methods are safe for concurrent use.
type Remote struct {
	base   string // http://HOST:PORT/probe/v1
	mcpURL string
	tr     *http.Transport
	hc     *http.Client
	closed atomic.Bool
}

// Dial checks that a probe answers at baseURL, the observation base URL
// `mcpconform probe` prints (http://HOST:PORT/probe/v1; a URL without a
// path gets /probe/v1).
func Dial(ctx context.Context, baseURL string) (*Remote, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("probe: dial %q: want http://HOST:PORT%s", baseURL, APIPath)
	}
	// The base URL, the observation API or the MCP endpoint: each names
	// the one probe, whose MCP endpoint is what a gateway is pointed at.
	if p := strings.Trim(u.Path, "/"); p == "" || p == "mcp" {
		u.Path = APIPath
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	// Its own transport, so Close drops only this client's connections.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the API answers loopback clients only
	r := &Remote{base: u.String(), tr: tr, hc: &http.Client{Transport: tr}}
	var info Info
	if err := r.do(ctx, http.MethodGet, "", nil, nil, &info); err != nil {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("probe: dial %s: %w", r.base, err)
	}
	if info.API != APIVersion {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("probe: dial %s: it answers %q, not a probe (%s)", r.base, info.API, APIVersion)
	}
	// The MCP endpoint on the host this client reached: the probe's own view
	// of its address may be a wildcard (0.0.0.0).
	r.mcpURL = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/mcp"}).String()
	return r, nil
}

// BaseURL is the observation API's base URL.
func (r *Remote) BaseURL() string { return r.base }

// URL is the probe's MCP endpoint on the host Dial reached.
func (r *Remote) URL() string { return r.mcpURL }

// Count is how many dispatches carried token; "" counts every dispatch.
func (r *Remote) Count(ctx context.Context, token string) (int, error) {
	var res countResponse
	if err := r.do(ctx, http.MethodGet, "/count", url.Values{"token": {token}}, nil, &res); err != nil {
		return 0, err
	}
	return res.Count, nil
}

// Dispatches is the dispatches whose token starts with tokenPrefix, in
// arrival order.
func (r *Remote) Dispatches(ctx context.Context, tokenPrefix string) ([]judge.Dispatch, error) {
	var res dispatchesResponse
	if err := r.do(ctx, http.MethodGet, "/dispatches", url.Values{"token_prefix": {tokenPrefix}}, nil, &res); err != nil {
		return nil, err
	}
	return res.Dispatches, nil
}

// WaitFor blocks until at least n dispatches of token ("" = any) arrived,
// one bounded long poll after another.
func (r *Remote) WaitFor(ctx context.Context, token string, n int) error {
	have := "not yet asked"
	for {
		var res waitResponse
		if err := r.do(ctx, http.MethodPost, "/wait", nil, waitRequest{Token: &token, N: n}, &res); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("probe: wait for %d dispatches of %q (have %s): %w", n, token, have, ctx.Err())
			}
			return err
		}
		if res.Reached {
			return nil
		}
		have = strconv.Itoa(res.Count)
	}
}

// Stall makes calls of token ("" = every call) block after they are
// counted, until Unstall.
func (r *Remote) Stall(ctx context.Context, token string) error {
	return r.do(ctx, http.MethodPost, "/stall", nil, tokenRequest{&token}, nil)
}

// Unstall releases the calls held by Stall(token).
func (r *Remote) Unstall(ctx context.Context, token string) error {
	return r.do(ctx, http.MethodPost, "/unstall", nil, tokenRequest{&token}, nil)
}

// Fail makes the next dispatch of token fail as how says (Probe.Fail).
func (r *Remote) Fail(ctx context.Context, token, how string) error {
	return r.do(ctx, http.MethodPost, "/fail", nil, failRequest{&token, how}, nil)
}

// Quiet returns once no dispatch whose token starts with tokenPrefix has
// arrived for quiet (see Probe.Quiet), carrying one quiet period across
// bounded long polls.
func (r *Remote) Quiet(ctx context.Context, tokenPrefix string, quiet time.Duration) error {
	if quiet <= 0 {
		return nil
	}
	req := quietRequest{TokenPrefix: tokenPrefix, Quiet: quiet.String()}
	for {
		var res quietResponse
		if err := r.do(ctx, http.MethodPost, "/quiet", nil, req, &res); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("probe: wait for %v without dispatches of %q*: %w", quiet, tokenPrefix, ctx.Err())
			}
			return err
		}
		if res.Quiet {
			return nil
		}
		if res.Since == nil {
			return fmt.Errorf("probe: quiet: an answer neither quiet nor resumable")
		}
		req.Since, req.After = res.Since, res.After
	}
}

// Forget drops the dispatches, counts and stalls of every token starting
// with tokenPrefix ("" = all) on the probe: a run forgets its own prefix
// when it ends.
func (r *Remote) Forget(ctx context.Context, tokenPrefix string) error {
	return r.do(ctx, http.MethodPost, "/forget", nil, prefixRequest{&tokenPrefix}, nil)
}

// Close drops this client's idle connections; the probe keeps running.
func (r *Remote) Close() error {
	r.closed.Store(true)
	r.tr.CloseIdleConnections()
	return nil
}

var errRemoteClosed = errors.New("probe: remote client closed")

// do sends one API request; a non-2xx answer is an error carrying the
// probe's reason.
func (r *Remote) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	if r.closed.Load() {
		return errRemoteClosed
	}
	target := r.base + path
	if q != nil {
		target += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("probe: %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return fmt.Errorf("probe: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("probe: %s %s: read answer: %w", method, target, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Reason string }
		if json.Unmarshal(data, &e) != nil || e.Reason == "" {
			return fmt.Errorf("probe: %s %s: %s: %.200s", method, target, resp.Status, data)
		}
		return fmt.Errorf("probe: %s %s: %d %s: %s", method, target, resp.StatusCode, e.Reason, e.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("probe: %s %s: answer %.200s: %w", method, target, data, err)
	}
	return nil
}
