package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/internal/cli"
)

const profileUsage = `Usage: mcpconform profile check FILE

Checks a gateway profile the way 'mcpconform run --profile FILE' reads it
(docs/profile.md explains the fields, docs/profile.schema.json states the
rules) and prints what the harness will use: name, URLs, protocol, unkeyed
policy, tools by role, the credentials present and the capabilities.
Secrets are never printed, only their first characters.

Exit codes: 0 the profile is valid; 1 it is not (every problem is printed,
one a line, as FILE: problem); 2 usage error or unreadable file.
`

// profileCmd is 'mcpconform profile check FILE', so a vendor can get a
// profile right before a run rather than from a run's set-up error.
func profileCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, profileUsage)
		return 0
	}
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 {
			fmt.Fprintf(stderr, "mcpconform profile: unknown subcommand %q\n\n", args[0])
		}
		fmt.Fprint(stderr, profileUsage)
		return 2
	}
	// -h is not an error: its text goes to stdout.
	fs := cli.NewFlagSet("mcpconform profile check", profileUsage, stdout, stderr)
	if code, ok := cli.Parse(fs, args[1:]); !ok {
		if code != 0 {
			fmt.Fprintf(stderr, "\n%s", profileUsage)
		}
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "mcpconform profile check: want one FILE, got %d arguments\n\n%s", fs.NArg(), profileUsage)
		return 2
	}
	path := fs.Arg(0)
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform profile check: %v\n", err)
		return 2
	}
	p, err := target.ParseProfile(b)
	if err != nil {
		for _, line := range problems(err) {
			fmt.Fprintf(stdout, "%s: %s\n", path, line)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid profile\n", path)
	writeProfileSummary(stdout, p)
	return 0
}

func isHelp(s string) bool {
	return s == "-h" || s == "-help" || s == "--help" || s == "help"
}

// problems lists the problems of a ParseProfile error, one a line.
func problems(err error) []string {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []string
	for _, e := range errs {
		out = append(out, strings.Split(e.Error(), "\n")...)
	}
	return out
}

func writeProfileSummary(w io.Writer, p *target.Profile) {
	line := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-13s %s\n", label, fmt.Sprintf(format, a...))
	}
	more := func(format string, a ...any) { line("", format, a...) }
	line("name", "%s", orNone(p.Name))
	for i, u := range p.URLs {
		if i == 0 {
			line("urls", "%s", u)
		} else {
			more("%s", u)
		}
	}
	if len(p.URLs) == 0 {
		line("urls", "none (give --target URL)")
	}
	switch {
	case p.ControlURL == "":
		line("control", "none")
	case p.ControlToken != "":
		line("control", "%s (token %s)", p.ControlURL, secret(p.ControlToken))
	default:
		line("control", "%s (no token)", p.ControlURL)
	}
	if p.ProtocolVersion == "" {
		line("protocol", "negotiated")
	} else {
		line("protocol", "%s", p.ProtocolVersion)
	}
	line("key", "%s", p.KeyWhere())
	line("auth", "%s", authSummary(p.Auth))
	line("receipt", "%s", p.ReceiptPath)
	line("unkeyed", "%s", p.UnkeyedPolicy)
	line("body limit", "%d bytes", p.BodyLimit)
	if len(p.Reasons) == 0 {
		line("reasons", "as in docs/wire.md")
	} else {
		line("reasons", "%d mapped: %s", len(p.Reasons), strings.Join(slices.Sorted(maps.Keys(p.Reasons)), ", "))
	}
	for i, role := range []string{target.RoleWrite, target.RoleWriteOther, target.RoleReadOnly, target.RoleApproval} {
		label := ""
		if i == 0 {
			label = "tools"
		}
		t, ok := p.Tool(role)
		switch {
		case !ok:
			line(label, "%-12s none", role)
		case t.Price == 1:
			line(label, "%-12s %s (1 credit)", role, t.Name)
		case t.Price > 0:
			line(label, "%-12s %s (%d credits)", role, t.Name, t.Price)
		default:
			line(label, "%-12s %s", role, t.Name)
		}
	}
	if e := p.Effects; e != nil {
		// The observer a run will count dispatches with: the target's own.
		line("effects", "write %s with %s", p.Tools.Write.Name, e.WriteArguments)
		more("read %s with %s, count at %s (the target reports its own effects)", e.Read.Tool, e.Read.Arguments, e.Read.Count)
	}
	writeCredentials(line, more, p)
	switch {
	case !p.Identity.HarnessIdP:
		line("identity", "none")
	case len(p.Identity.Subjects) == 0:
		line("identity", "harness IdP; subjects are the principal names")
	default:
		var subs []string
		for _, n := range slices.Sorted(maps.Keys(p.Identity.Subjects)) {
			subs = append(subs, n+"="+p.Identity.Subjects[n])
		}
		line("identity", "harness IdP; subjects %s", strings.Join(subs, ", "))
	}
	line("capabilities", "%s", capabilitySummary(p))
}

func writeCredentials(line func(string, string, ...any), more func(string, ...any), p *target.Profile) {
	cr := p.Credentials
	if len(cr.APIKeys) == 0 && cr.OtherWallet == nil && len(cr.PrincipalTokens) == 0 {
		line("credentials", "none")
		return
	}
	first := true
	add := func(format string, a ...any) {
		if first {
			line("credentials", format, a...)
			first = false
		} else {
			more(format, a...)
		}
	}
	if len(cr.APIKeys) > 0 {
		keys := make([]string, len(cr.APIKeys))
		for i, k := range cr.APIKeys {
			keys[i] = secret(k)
		}
		noun := "api keys"
		if len(keys) == 1 {
			noun = "api key"
		}
		add("wallet %s: %s %s", orNone(cr.WalletID), noun, strings.Join(keys, ", "))
	}
	if o := cr.OtherWallet; o != nil {
		add("other wallet %s: api key %s", orNone(o.WalletID), secret(o.APIKey))
	}
	if len(cr.PrincipalTokens) > 0 {
		var toks []string
		for _, n := range slices.Sorted(maps.Keys(cr.PrincipalTokens)) {
			toks = append(toks, n+" "+secret(cr.PrincipalTokens[n]))
		}
		add("principal tokens: %s", strings.Join(toks, ", "))
	}
}

func authSummary(a target.Auth) string {
	header, prefix := a.Header, ""
	if header == "" {
		header = "Authorization"
	}
	switch {
	case a.Prefix != nil:
		prefix = *a.Prefix
	case header == "Authorization":
		prefix = "Bearer "
	}
	principal := a.PrincipalHeader
	if principal == "" {
		principal = "X-Principal-Token"
	}
	return fmt.Sprintf("%s: %s<api key>; principal token in %s", header, prefix, principal)
}

// capabilitySummary lists the profile's capabilities with those it implies;
// a control API with no list is asked at run time.
func capabilitySummary(p *target.Profile) string {
	caps := slices.Clone(p.Capabilities)
	for _, c := range target.KnownCapabilities {
		if !slices.Contains(caps, c) && p.Has(c) {
			caps = append(caps, c+" (implied)")
		}
	}
	s := strings.Join(caps, ", ")
	switch {
	case len(p.Capabilities) == 0 && p.ControlURL != "" && s == "":
		return "read from the control API at run time"
	case len(p.Capabilities) == 0 && p.ControlURL != "":
		return s + "; the rest read from the control API at run time"
	case s == "":
		return "none (scenarios needing any are skipped)"
	}
	return s
}

// secret shows the start of a credential, never all of it: six characters,
// or half of a shorter one.
func secret(s string) string {
	r := []rune(s)
	return string(r[:min(6, len(r)/2)]) + "…"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
