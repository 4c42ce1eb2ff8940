package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpconform/mcpconform/features"
	"github.com/mcpconform/mcpconform/internal/catalog"
	"github.com/mcpconform/mcpconform/internal/catalog/tagexpr"
	"github.com/mcpconform/mcpconform/internal/cli"
)

func listCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("list", listUsage, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	long := fs.Bool("requirements", false, "print each scenario's requirement and source")
	tags := fs.String("tags", "", "list only the scenarios this tag expression selects (as in mcpconform run --tags)")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	es, err := catalog.Load(features.FS)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform list: %v\n", err)
		return 2
	}
	expr, err := tagexpr.Parse(*tags)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform list: --tags: %v\n", err)
		return 2
	}
	es = slices.DeleteFunc(es, func(e catalog.Entry) bool { return !expr.Match(e.Tags) })
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(es); err != nil {
			return 2
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tNEEDS\tTITLE")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.ID, e.Level, strings.Join(e.Needs, ","), e.Title)
		if *long {
			fmt.Fprintf(tw, "\t\t\t  requirement: %s\n\t\t\t  source: %s\n", e.Requirement, e.Source)
		}
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d scenarios\n", len(es))
	return 0
}

const listUsage = "Usage: mcpconform list [flags]\n\nLists the scenarios: ID, level, the capabilities they need, title.\n\nFlags:" + "\n"
