package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/reports"
)

// ExternalRun presents the reference gateway as a vendor's gateway: no
// control API, set up by a fixtures file an operator could have written,
// its tools pointed at a probe that was started first (and is observed
// through its remote API, --probe-url), trusting the harness's identity
// provider at a pinned address and key; then the suite runs against its URL
// through a profile, as against any other gateway. mode is a bugmap mode;
// bug, if set, is the one switch the gateway runs with.
func ExternalRun(ctx context.Context, cfg Config, mode, bug string) (Outcome, error) {
	c, stop, err := ExternalTarget(ctx, cfg, mode, bug)
	if err != nil {
		return Outcome{Code: ExitSetup}, err
	}
	defer stop()
	out, err := Run(ctx, c)
	if err != nil {
		return out, err
	}
	if bug != "" {
		out.Run.Target.Bugs = []string{bug}
	}
	return out, nil
}

// ExternalTarget starts what ExternalRun tests (the probe, the reference
// gateway without a control API, its fixtures and profile) and returns
// cfg pointed at it, as `run` and explore take a vendor's gateway; stop
// ends it all.
func ExternalTarget(ctx context.Context, cfg Config, mode, bug string) (_ Config, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	dir, err := os.MkdirTemp("", "mcpconform-external-*")
	if err != nil {
		return cfg, stop, setupErr("external self-test: %w", err)
	}
	stops = append(stops, func() { os.RemoveAll(dir) })
	pr, err := probe.Start(probe.Options{})
	if err != nil {
		return cfg, stop, setupErr("external self-test: %w", err)
	}
	stops = append(stops, func() { pr.Close() })
	idpAddr, err := freeLoopback()
	if err != nil {
		return cfg, stop, setupErr("external self-test: %w", err)
	}
	issuer := "http://" + idpAddr
	keys := []string{apiKey("ext-a"), apiKey("ext-b"), apiKey("ext-other")}
	tool := func(name, upstream string, price int64, ro, approval bool) map[string]any {
		return map[string]any{"name": name, "upstream_url": pr.URL(), "upstream_tool": upstream, "price": price,
			"read_only": ro, "approval": approval}
	}
	fixtures := map[string]any{
		"wallets": []any{
			map[string]any{"id": "w-ext-1", "balance": 1 << 40, "api_keys": keys[:2]},
			map[string]any{"id": "w-ext-2", "balance": 1 << 40, "api_keys": keys[2:]},
		},
		"tools": []any{
			tool("ext.write", probe.ToolWrite, 3, false, false),
			tool("ext.write2", probe.ToolWrite, 3, false, false),
			tool("ext.count", probe.ToolRead, 1, true, false),
			tool("ext.approve", probe.ToolWrite, 5, false, true),
		},
	}
	principals := mode == bugmap.ModeWirePrincipals
	if principals {
		fixtures["trust"] = []any{map[string]any{"provider": "harness", "issuer": issuer, "jwks_url": issuer + "/jwks.json", "audience": "mcpconform"}}
		fixtures["principals"] = []any{
			map[string]any{"provider": "harness", "issuer": issuer, "subject": "ext-alice", "tools": []string{}},
			map[string]any{"provider": "harness", "issuer": issuer, "subject": "ext-bob", "tools": []string{}},
		}
	}
	fixturesPath := filepath.Join(dir, "fixtures.json")
	if err := writeJSON(fixturesPath, fixtures); err != nil {
		return cfg, stop, setupErr("external self-test: %w", err)
	}
	args := []string{"--fixtures", fixturesPath}
	policy := target.UnkeyedDerived
	if mode == bugmap.ModeWireRefuse {
		args, policy = append(args, "--window", "0s"), target.UnkeyedRefuse
	}
	var bugs []string
	if bug != "" {
		bugs = []string{bug}
	}
	gw, err := target.Reference(ctx, target.Options{Binary: cfg.Binary, Store: "sqlite", StateDir: filepath.Join(dir, "state"),
		Bugs: bugs, NoControl: true, ExtraArgs: args, Log: cfg.Log})
	if err != nil {
		return cfg, stop, setupErr("external self-test: start the reference without a control API: %w", err)
	}
	stops = append(stops, func() { gw.Close() })
	profile := map[string]any{
		"name":           "reference gateway, no control API (" + mode + ")",
		"unkeyed_policy": policy,
		"tools": map[string]any{
			"write": map[string]any{"name": "ext.write", "price": 3}, "write_other": map[string]any{"name": "ext.write2", "price": 3},
			"read_only": map[string]any{"name": "ext.count", "price": 1}, "approval": map[string]any{"name": "ext.approve", "price": 5},
		},
		"credentials": map[string]any{"api_keys": keys[:2], "wallet_id": "w-ext-1",
			"other_wallet": map[string]any{"wallet_id": "w-ext-2", "api_key": keys[2]}},
	}
	if principals {
		profile["identity"] = map[string]any{"harness_idp": true, "subjects": map[string]string{"alice": "ext-alice", "bob": "ext-bob"}}
	}
	profilePath := filepath.Join(dir, "profile.json")
	if err := writeJSON(profilePath, profile); err != nil {
		return cfg, stop, setupErr("external self-test: %w", err)
	}
	c := cfg
	c.Target, c.Profile, c.Bugs = gw.URLs[0], profilePath, nil
	c.ProbeURL = "http://" + pr.Addr()
	c.IdPAddr, c.IdPKey = idpAddr, filepath.Join(dir, "idp.pem")
	return c, stop, nil
}

// SelfTestExternal runs ExternalRun once per bug the mode lists (only,
// when given, the named ones) and returns the catch table: each row OK when
// every listed scenario failed and nothing else did beyond the bug's
// collateral.
func SelfTestExternal(ctx context.Context, cfg Config, mode string, only []string, progress func(reports.Catch)) ([]reports.Catch, error) {
	listed := bugmap.External[mode]
	names := make([]string, 0, len(listed))
	for b := range listed {
		if len(only) == 0 || slices.Contains(only, b) {
			names = append(names, b)
		}
	}
	for _, b := range only {
		if _, ok := listed[b]; !ok {
			return nil, fmt.Errorf("external self-test %s: bug %q is not one the mode can see (bugmap.External)", mode, b)
		}
	}
	sort.Strings(names)
	var table []reports.Catch
	for _, b := range names {
		out, err := ExternalRun(ctx, cfg, mode, b)
		if err != nil {
			return table, fmt.Errorf("external self-test %s %s: %w", mode, b, err)
		}
		row := catchRow(out.Run, b, listed[b], bugmap.ExternalCollateral[mode][b])
		table = append(table, row)
		if progress != nil {
			progress(row)
		}
	}
	return table, nil
}

func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("pick a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// apiKey is a reference-format key with a fresh secret.
func apiKey(id string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "mcpk_" + id + "_" + hex.EncodeToString(b)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
