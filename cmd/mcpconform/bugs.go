package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpconform/mcpconform/internal/bugmap"
	"github.com/mcpconform/mcpconform/reference/bugs"
)

func bugsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "Usage: mcpconform bugs\n\nLists the reference gateway's bug switches (mcpconform gateway --bug NAME) and the scenarios expected to catch each.")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUG\tSTORE\tCAUGHT BY\tDESCRIPTION")
	for _, b := range bugs.All {
		store := b.Store
		if store == "" {
			store = "any"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", b.Name, store, strings.Join(bugmap.Scenarios(bugmap.Catchers[b.Name]), ","), b.Description)
	}
	tw.Flush()
	return 0
}
