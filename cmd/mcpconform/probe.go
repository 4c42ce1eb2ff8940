package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/mcpconform/mcpconform/drivers/probe"
	"github.com/mcpconform/mcpconform/internal/cli"
)

const probeUsage = `Usage: mcpconform probe [flags]

Runs the harness's upstream probe on its own, until SIGINT or SIGTERM: an MCP
server (POST /mcp, stateless) whose tools count each dispatch by the "token"
argument, so a run's dispatch counts never depend on the gateway reporting
honestly. Start it before a gateway that lists its upstream's tools at
start-up, at a fixed address; several runs may share it (each run's tokens
carry its own prefix, which the run forgets when it ends).

Tools, each with arguments {"token": "<string>"} (other arguments are
accepted and ignored):
%s
A gateway without a control API needs its tools routed to probe.write (and,
for a metered read-only tool, probe.read); probe.ask and probe.sample serve
scenarios whose tools only a control API registers (docs/profile.md).

Runs observe it through the observation API at /probe/v1/ on the same
address (loopback clients only): dispatches, counts, stall and unstall, and
long-poll waits.

Examples:
  mcpconform probe
  mcpconform probe --addr 127.0.0.1:0      (any free port; the URLs are printed)
  mcpconform run --target URL --profile F --probe-url http://127.0.0.1:8720
                                           (the base URL; its /mcp or /probe/v1 name the same probe)

Flags:
`

func probeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var toolList strings.Builder
	for _, t := range probe.Tools {
		fmt.Fprintf(&toolList, "  %-14s %s: %s\n", t.Name, toolKind(t), t.Description)
	}
	fs := newFlagSet("probe", fmt.Sprintf(probeUsage, toolList.String()), stderr)
	addr := fs.String("addr", "127.0.0.1:8720", "listen address (host:port; port 0 picks one)")
	verbose := fs.Bool("v", false, "log the MCP server's messages to stderr")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpconform probe: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	opts := probe.Options{Addr: *addr}
	if *verbose {
		opts.Log = stderr
	}
	p, err := probe.Start(opts)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform: %v\n", err) // err says "probe: listen …"
		return 2
	}
	base := "http://" + dialable(p.Addr())
	mcpURL := base + "/mcp"
	fmt.Fprintf(stdout, "mcpconform probe: the harness's upstream MCP server\n")
	fmt.Fprintf(stdout, "  MCP endpoint:     %s\n", mcpURL)
	fmt.Fprintf(stdout, "  observation API:  %s%s (loopback clients only)\n", base, probe.APIPath)
	var tools []string
	for _, t := range probe.Tools {
		tools = append(tools, fmt.Sprintf("%s (%s)", t.Name, toolKind(t)))
	}
	fmt.Fprintf(stdout, "  tools:            %s; arguments {\"token\": \"<string>\"}\n", strings.Join(tools, ", "))
	fmt.Fprintf(stdout, "Point the gateway's upstream MCP server at %s (or register each tool with upstream_url %s through its control API).\n", mcpURL, mcpURL)
	fmt.Fprintf(stdout, "listening on %s\n", base)
	<-ctx.Done()
	if err := p.Close(); err != nil {
		fmt.Fprintf(stderr, "mcpconform probe: %v\n", err)
		return 1
	}
	return 0
}

func toolKind(t probe.ToolInfo) string {
	if t.ReadOnly {
		return "read-only"
	}
	return "mutating"
}

// dialable is addr with a wildcard host (0.0.0.0, ::) replaced by loopback:
// a URL to a wildcard address reaches nothing on most systems, and the
// observation API answers loopback clients only anyway.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}
