package steps

import (
	"regexp"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// observedBy maps Then-step texts to the capability their checks need;
// a step not listed is observed on the wire itself.
var observedBy = []struct {
	re         *regexp.Regexp
	capability string
}{
	{regexp.MustCompile(`^the probe saw `), judge.CapUpstream},
	{regexp.MustCompile(` is its own operation or a refusal`), judge.CapUpstream},
	{regexp.MustCompile(`^no operation was dispatched twice$`), judge.CapUpstream},
	{regexp.MustCompile(`^the ledger has `), judge.CapLedger},
	{regexp.MustCompile(`^the wallet balance changed by `), judge.CapLedger},
	{regexp.MustCompile(` carries the receipt the ledger debited$`), judge.CapLedger},
	{regexp.MustCompile(`^every dispatched operation was charged exactly once$`), judge.CapLedger},
}

// ObservedBy is the capability a step's checks need to be observed, "" for
// a step that checks nothing beyond the wire (or is no check at all). The
// doctor uses it to tell which scenarios a missing capability leaves
// incomplete without running them.
func ObservedBy(stepText string) string {
	for _, o := range observedBy {
		if o.re.MatchString(stepText) {
			return o.capability
		}
	}
	return ""
}
