// Command mcpofficial runs the official MCP conformance suite against go-sdk's
// everything-server alone and against the reference gateway fronting it, on
// both protocol versions, and fails when the gateway fails a scenario the
// everything-server passes that the expected-failures file does not list
// (`make conformance`).
package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/internal/officialsuite"
)

func main() {
	home, _ := os.UserHomeDir()
	cfg := officialsuite.Config{Log: os.Stderr}
	fs := cli.NewFlagSet("mcpofficial", "Usage of "+os.Args[0]+":\n", os.Stderr, os.Stderr) // the text flag.Parse printed
	fs.StringVar(&cfg.Cache, "cache", filepath.Join(home, ".cache", "mcpconform"), "where Node.js and the suite are installed (outside the checkout)")
	fs.StringVar(&cfg.Work, "work", "", "directory for results and logs (default: a new temporary one)")
	fs.StringVar(&cfg.Gateway, "gateway", "bin/mcpconform", "the mcpconform binary whose gateway is tested")
	baselines := fs.String("baselines", "internal/officialsuite", "directory of expected-failures-<version>.yml")
	if code, ok := cli.Parse(fs, os.Args[1:]); !ok {
		os.Exit(code)
	}
	cfg.Go = os.Getenv("GO")
	if cfg.Go == "" {
		cfg.Go = "go"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	ok, err := run(ctx, cfg, *baselines)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpofficial: %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("(%.0fs)\n", time.Since(start).Seconds())
	if !ok {
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg officialsuite.Config, baselines string) (ok bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Work == "" {
		dir, err := os.MkdirTemp("", "mcpofficial-")
		if err != nil {
			return false, err
		}
		cfg.Work = dir
		// Kept when the run fails, for its results and logs.
		defer func() {
			if ok {
				_ = os.RemoveAll(dir)
			}
		}()
	} else if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
		return false, err
	}
	gw, err := filepath.Abs(cfg.Gateway)
	if err != nil {
		return false, err
	}
	cfg.Gateway = gw
	fmt.Printf("work: %s (removed if the run passes and -work is not given)\n", cfg.Work)

	versions := officialsuite.Versions(baselines)
	base := make([]officialsuite.Baseline, len(versions))
	for i, v := range versions {
		var err error
		if base[i], err = officialsuite.LoadBaseline(v); err != nil {
			return false, err
		}
	}
	nodeBin, err := officialsuite.EnsureNode(ctx, cfg)
	if err != nil {
		return false, err
	}
	entries := make([]string, len(versions))
	for i, v := range versions {
		if entries[i], err = officialsuite.EnsureSuite(ctx, cfg, nodeBin, v); err != nil {
			return false, err
		}
	}
	everything, err := officialsuite.BuildEverythingServer(ctx, cfg)
	if err != nil {
		return false, err
	}

	var procs officialsuite.Procs
	defer procs.Stop()
	ok = true
	for i, v := range versions {
		// The gateway fronts the everything-server the suite runs alone
		// against, so the two runs compare like with like.
		addr, err := officialsuite.FreeAddr()
		if err != nil {
			return false, err
		}
		if err := procs.Start(cfg, "everything-server-"+v.Spec, addr, everything, "-http", addr, fmt.Sprintf("-stateless=%v", v.Stateless)); err != nil {
			return false, err
		}
		upstream := "http://" + addr + "/mcp"
		gw, err := startGateway(ctx, cfg, &procs, v.Spec, upstream)
		if err != nil {
			return false, err
		}
		mode := "stateful"
		if v.Stateless {
			mode = "stateless"
		}
		fmt.Printf("%s: the %s everything-server at %s alone, then through a gateway serving it whole (%d tools) at %s/mcp\n",
			v.Spec, mode, upstream, gw.tools, gw.proxy)
		alone, err := officialsuite.RunSuite(ctx, cfg, nodeBin, entries[i], v, upstream, "alone-"+v.Spec)
		if err != nil {
			return false, err
		}
		// Each scenario runs by itself on a wallet of its own: scenarios
		// repeat each other's unkeyed calls, which one wallet would replay by
		// design (input-required-result-result-type would get the final
		// result basic-elicitation stored). This suite judges first calls;
		// replays, on either wire, are mcpconform's own scenarios'
		// (retry-06, retry-07, retry-09, retry-10). Rerunning only the
		// failures alone would hide a bug that only replays show.
		through, err := officialsuite.RunScenarios(ctx, cfg, nodeBin, entries[i], v, gw.proxy+"/mcp", "gateway-"+v.Spec,
			slices.Sorted(maps.Keys(alone)), func(string) error { return gw.newWallet(ctx) })
		if err != nil {
			return false, err
		}
		c := officialsuite.Compare(alone, through, base[i])
		c.Write(os.Stdout, fmt.Sprintf("%s (suite %s, %s everything-server)", v.Spec, v.Package, mode), base[i])
		ok = ok && c.OK()
	}
	if ok {
		fmt.Println("PASS: the gateway passes every scenario the everything-server passes, but the expected failures")
	} else {
		fmt.Println("FAIL")
	}
	return ok, nil
}

// gateway is a gateway of one version's run, serving the everything-server
// whole behind a proxy that adds the key of its current wallet.
type gateway struct {
	base, token string
	proxy       string // the proxy's base URL
	tools       int    // tools taken from the everything-server
	key         atomic.Value
}

// newWallet funds a fresh wallet and has the proxy use its key from now on.
func (g *gateway) newWallet(ctx context.Context) error {
	k, err := officialsuite.NewKey(ctx, g.base, g.token)
	if err != nil {
		return err
	}
	g.key.Store(k)
	return nil
}

// startGateway starts a gateway of its own for one version's run (a fresh
// store: nothing an earlier run stored is replayed) and has it serve the
// upstream whole.
func startGateway(ctx context.Context, cfg officialsuite.Config, procs *officialsuite.Procs, spec, upstream string) (*gateway, error) {
	addr, err := officialsuite.FreeAddr()
	if err != nil {
		return nil, err
	}
	g := &gateway{base: "http://" + addr, token: "mcpofficial"}
	if err := procs.Start(cfg, "mcpconform-gateway-"+spec, addr, cfg.Gateway, "gateway", "--addr", addr,
		"--store", "sqlite:"+filepath.Join(cfg.Work, "gateway-"+spec+".db"), "--control-token", g.token); err != nil {
		return nil, err
	}
	if g.tools, err = officialsuite.RegisterServer(ctx, g.base, g.token, upstream); err != nil {
		return nil, err
	}
	if err := g.newWallet(ctx); err != nil {
		return nil, err
	}
	proxyLog, err := os.Create(filepath.Join(cfg.Work, "proxy-"+spec+".log"))
	if err != nil {
		return nil, err
	}
	// The proxy logs until ctx ends; the file is closed with the process.
	if g.proxy, err = officialsuite.KeyProxy(ctx, g.base, func() string { return g.key.Load().(string) }, proxyLog); err != nil {
		proxyLog.Close()
		return nil, err
	}
	return g, nil
}
