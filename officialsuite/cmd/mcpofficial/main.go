// Command mcpofficial runs the official MCP conformance suite against go-sdk's
// everything-server alone and against the reference gateway fronting it, on
// both protocol versions, and fails when the gateway fails a scenario the
// everything-server passes that the expected-failures file does not list
// (`make conformance`).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/mcpconform/mcpconform/officialsuite"
)

func main() {
	home, _ := os.UserHomeDir()
	cfg := officialsuite.Config{Log: os.Stderr}
	flag.StringVar(&cfg.Cache, "cache", filepath.Join(home, ".cache", "mcpconform"), "where Node.js and the suite are installed (outside the checkout)")
	flag.StringVar(&cfg.Work, "work", "", "directory for results and logs (default: a new temporary one)")
	flag.StringVar(&cfg.Gateway, "gateway", "bin/mcpconform", "the mcpconform binary whose gateway is tested")
	baselines := flag.String("baselines", "officialsuite", "directory of expected-failures-<version>.yml")
	flag.Parse()
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

	// One stateful and one stateless everything-server for the runs alone;
	// the gateway fronts the stateful one.
	var procs officialsuite.Procs
	defer procs.Stop()
	addrs := map[bool]string{}
	for _, stateless := range []bool{false, true} {
		addr, err := officialsuite.FreeAddr()
		if err != nil {
			return false, err
		}
		name := fmt.Sprintf("everything-server-stateless-%v", stateless)
		if err := procs.Start(cfg, name, addr, everything, "-http", addr, fmt.Sprintf("-stateless=%v", stateless)); err != nil {
			return false, err
		}
		addrs[stateless] = addr
	}
	gwAddr, err := officialsuite.FreeAddr()
	if err != nil {
		return false, err
	}
	const token = "mcpofficial"
	if err := procs.Start(cfg, "gateway", gwAddr, cfg.Gateway, "gateway", "--addr", gwAddr,
		"--store", "sqlite:"+filepath.Join(cfg.Work, "gateway.db"), "--control-token", token); err != nil {
		return false, err
	}
	key, n, err := officialsuite.RegisterUpstream(ctx, "http://"+gwAddr, token, "http://"+addrs[false]+"/mcp")
	if err != nil {
		return false, err
	}
	proxyLog, err := os.Create(filepath.Join(cfg.Work, "proxy.log"))
	if err != nil {
		return false, err
	}
	defer proxyLog.Close()
	proxy, err := officialsuite.KeyProxy(ctx, "http://"+gwAddr, key, proxyLog)
	if err != nil {
		return false, err
	}
	fmt.Printf("gateway at %s fronting the everything-server's %d tools; suite sees it at %s/mcp\n", gwAddr, n, proxy)

	ok = true
	for i, v := range versions {
		alone, err := officialsuite.RunSuite(ctx, cfg, nodeBin, entries[i], v, "http://"+addrs[v.Stateless]+"/mcp", "alone-"+v.Spec)
		if err != nil {
			return false, err
		}
		through, err := officialsuite.RunSuite(ctx, cfg, nodeBin, entries[i], v, proxy+"/mcp", "gateway-"+v.Spec)
		if err != nil {
			return false, err
		}
		c := officialsuite.Compare(alone, through, base[i])
		c.Write(os.Stdout, v.Spec+" (suite "+v.Package+")", base[i])
		ok = ok && c.OK()
	}
	if ok {
		fmt.Println("PASS: the gateway passes every scenario the everything-server passes, but the expected failures")
	} else {
		fmt.Println("FAIL")
	}
	return ok, nil
}
