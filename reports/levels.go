package reports

import (
	"slices"
	"strings"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Certification levels, each the set of checks a vendor can claim:
//   - wire: what the MCP endpoint, the harness's upstream probe and (where
//     the gateway trusts it) the harness's identity provider observe;
//   - metered: wire, plus the ledger;
//   - full: metered, plus everything a control API steers (fixtures,
//     clock, faults, settings, principals) and two gateway processes.
const (
	LevelWire    = "wire"
	LevelMetered = "metered"
	LevelFull    = "full"
)

// Levels in ascending order.
var Levels = []string{LevelWire, LevelMetered, LevelFull}

var capLevel = map[string]string{
	judge.CapWire: LevelWire, judge.CapUpstream: LevelWire, judge.CapEffects: LevelWire, judge.CapPrincipalTokens: LevelWire,
	judge.CapSecondKey: LevelWire, judge.CapOtherWallet: LevelWire, judge.CapToolWriteOther: LevelWire,
	judge.CapToolReadOnly: LevelWire, judge.CapToolApproval: LevelWire,
	judge.CapLedger: LevelMetered,
}

// CapabilityLevel is the lowest level that includes a capability; one not
// named above (fixtures, clock, faults, ...) belongs to full.
func CapabilityLevel(capability string) string {
	if l, ok := capLevel[capability]; ok {
		return l
	}
	return LevelFull
}

// LevelRank orders levels; an unknown level ranks above full, so nothing
// is ever judged against fewer checks than were asked for.
func LevelRank(level string) int {
	if i := slices.Index(Levels, level); i >= 0 {
		return i
	}
	return len(Levels)
}

// WithinLevel reports whether capability is part of what level claims.
func WithinLevel(capability, level string) bool {
	return LevelRank(CapabilityLevel(capability)) <= LevelRank(level)
}

// HighestLevel is the highest level every capability of which is in caps:
// what a target can claim by default. Wire needs the upstream probe.
func HighestLevel(caps map[string]bool) string {
	best := LevelWire
	for _, l := range Levels[1:] {
		if !levelCovered(l, caps) {
			break
		}
		best = l
	}
	return best
}

// levelCaps are the capabilities each level above wire adds.
var levelCaps = map[string][]string{
	LevelMetered: {judge.CapLedger},
	LevelFull:    {judge.CapFixtures, judge.CapClock, judge.CapFaults, judge.CapSettings, judge.CapPrincipals, judge.CapTwoURLs},
}

func levelCovered(level string, caps map[string]bool) bool {
	for _, l := range Levels[1 : LevelRank(level)+1] {
		for _, c := range levelCaps[l] {
			if !caps[c] {
				return false
			}
		}
	}
	return true
}

// ValidLevel reports whether s names a level.
func ValidLevel(s string) bool { return slices.Contains(Levels, s) }

// LevelNames is "wire, metered, full", for messages.
func LevelNames() string { return strings.Join(Levels, ", ") }
