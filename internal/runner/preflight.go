package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/steps"
)

// Preflighted is what the first contact with the target found.
type Preflighted struct {
	ServerName, ServerVersion string
	Protocol                  string // the MCP version negotiated (or pinned)
}

// Preflight connects to the target once with the credentials scenarios
// will use, before any scenario runs: an unreachable target or refused
// credentials are a set-up error (exit 2), never nonconformance. The
// protocol version it negotiates is pinned for the run, so every client
// speaks what the first did.
func Preflight(ctx context.Context, env *steps.Env) (Preflighted, error) {
	ctx, cancel := context.WithTimeout(ctx, preflightWait)
	defer cancel()
	c := env.Profile.Client(env.URLs[0])
	if ctl := env.Control(); ctl != nil && len(env.Profile.Credentials.APIKeys) == 0 {
		key, err := walletKey(ctx, env, 0)
		if err != nil {
			return Preflighted{}, setupErr("preflight: %w", err)
		}
		c.APIKey = key
	}
	if err := reachable(ctx, env.URLs[0]); err != nil {
		return Preflighted{}, setupErr("preflight: target %s unreachable (is the gateway running and listening there?): %w", env.URLs[0], err)
	}
	if err := c.Connect(ctx); err != nil {
		var nerr net.Error
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout():
			return Preflighted{}, setupErr("preflight: %s accepts connections but did not answer initialize within %v: is it the gateway's MCP endpoint, and is the gateway ready (one waiting on its upstream answers nothing)?", env.URLs[0], preflightWait)
		case errors.As(err, &nerr):
			return Preflighted{}, setupErr("preflight: target %s unreachable: %w", env.URLs[0], err)
		}
		return Preflighted{}, setupErr("preflight: target %s refused the MCP connection (check the URL, the API key and auth settings of the profile): %w", env.URLs[0], err)
	}
	a, err := c.ListTools(ctx)
	if err != nil {
		return Preflighted{}, setupErr("preflight: tools/list on %s: %w", env.URLs[0], err)
	}
	if a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden {
		return Preflighted{}, setupErr("preflight: %s refused the credentials (HTTP %d on tools/list)", env.URLs[0], a.Status)
	}
	env.Evident = evidentFeatures(a.Result())
	name, version := c.ServerInfo()
	env.Speaks = map[string]bool{c.Version(): true}
	// Learn which of the two wires the target serves, whatever the profile
	// pinned, so scenarios written for a wire run or are not applicable:
	// negotiation picks 2026-07-28 only when the target serves it, and a
	// 2025-11-25 initialize answers for the older one.
	for _, v := range []string{"", wire.V20251125} {
		n := env.Profile.Client(env.URLs[0])
		n.APIKey, n.ProtocolVersion = c.APIKey, v
		if err := n.Connect(ctx); err == nil {
			env.Speaks[n.Version()] = true
		}
	}
	env.Profile.ProtocolVersion = c.Version()
	return Preflighted{ServerName: name, ServerVersion: version, Protocol: c.Version()}, nil
}

// evidentFeatures are optional features the target's tools/list shows it
// has, whatever the profile declares: a tool annotated readOnlyHint is a
// read-only tool, so scenarios about metered reads are gaps when the
// profile names none, never "not applicable".
func evidentFeatures(result json.RawMessage) map[string]string {
	out := map[string]string{}
	tools, err := listed(result)
	if err != nil {
		return out
	}
	var ro []string
	for _, t := range tools {
		if t.Annotations.ReadOnlyHint {
			ro = append(ro, t.Name)
		}
	}
	if len(ro) > 0 {
		out[judge.CapToolReadOnly] = "its tools/list marks read-only: " + strings.Join(ro, ", ")
	}
	return out
}

// listedTool is what the runner reads of a tools/list entry.
type listedTool struct {
	Name        string `json:"name"`
	Annotations struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// listed decodes a tools/list result.
func listed(result json.RawMessage) ([]listedTool, error) {
	var r struct {
		Tools []listedTool `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("decode tools/list: %w", err)
	}
	return r.Tools, nil
}

// preflightWait bounds the preflight: a gateway that is up answers
// initialize and tools/list in well under it.
const preflightWait = 15 * time.Second

// reachable dials the target's host and port once, so a target nobody
// listens at is told apart from one that accepts and never answers.
func reachable(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("parse %q: %w", target, err)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		return err
	}
	return conn.Close()
}
