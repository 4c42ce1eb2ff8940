package reports

import (
	"slices"
	"strings"
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

// Capabilities a check observes with or a situation needs. Those of the
// wire level come from the harness itself or the profile (the operator's
// tools, keys and trust); the others need a control API.
const (
	CapWire            = "wire"             // the MCP endpoint itself
	CapUpstream        = "upstream"         // the target's tools reach the harness probe
	CapPrincipalTokens = "principal-tokens" // the harness can present tokens of distinct principals
	CapSecondKey       = "second-key"       // a second API key of the same wallet
	CapOtherWallet     = "other-wallet"     // an API key of another wallet
	CapToolWriteOther  = "tool-write-other" // a second mutating tool at the probe
	CapToolReadOnly    = "tool-read-only"   // a metered read-only tool at the probe
	CapToolApproval    = "tool-approval"    // an approval-gated tool at the probe
	CapLedger          = "ledger"
	CapFixtures        = "fixtures" // wallets, keys, tools and permits made on demand
	CapClock           = "clock"
	CapFaults          = "faults"
	CapSettings        = "settings"
	CapPrincipals      = "principals" // principals registered and revoked on demand
	CapTwoURLs         = "two-urls"
)

var capLevel = map[string]string{
	CapWire: LevelWire, CapUpstream: LevelWire, CapPrincipalTokens: LevelWire,
	CapSecondKey: LevelWire, CapOtherWallet: LevelWire, CapToolWriteOther: LevelWire,
	CapToolReadOnly: LevelWire, CapToolApproval: LevelWire,
	CapLedger: LevelMetered,
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
	LevelMetered: {CapLedger},
	LevelFull:    {CapFixtures, CapClock, CapFaults, CapSettings, CapPrincipals, CapTwoURLs},
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
