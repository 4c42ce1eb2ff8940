package steps

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cucumber/godog"

	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
)

// Dimensions a scenario's situation does not depend on, which a crossed
// scenario varies: the MCP version every client speaks, the gateway URL a
// retry reaches, and real time passing between two calls. A bug that lives
// in one of them (a binding dropped on one wire, a cache kept in one
// process's memory, a promise that holds for a second) passes every
// scenario that never leaves the run's default.
func registerDimensions(sc *godog.ScenarioContext) {
	sc.Step(`^the clients speak protocol (\S+)$`, clientsSpeak)
	// The run's own version (the profile's, or as negotiated): the
	// scenario a crossed one repeats on another version names it too.
	sc.Step(`^the clients speak the run's protocol version$`, func() error { return nil })
	sc.Step(`^"([^"]*)" retries (?:its|their) last call with a new JSON-RPC id on the other gateway URL$`, func(ctx context.Context, who string) error {
		wc, err := getWorld(ctx).otherURL(who)
		if err != nil {
			return err
		}
		return retryVia(ctx, who, wc)
	})
	sc.Step(`^"([^"]*)" retries (?:its|their) last call with a new JSON-RPC id on the other gateway URL until it is not in progress$`, func(ctx context.Context, who string) error {
		wc, err := getWorld(ctx).otherURL(who)
		if err != nil {
			return err
		}
		return retryUntilDecidedVia(ctx, who, wc)
	})
	sc.Step(`^(\d+) clients split across every gateway URL call "([^"]*)" with (\{.*\}) using key "([^"]*)" at once$`, func(ctx context.Context, n int, tool, args, key string) error {
		return crowd(ctx, n, tool, args, key, true, false)
	})
	sc.Step(`^(\d+(?:\.\d+)?) seconds? pass(?:es)?$`, secondsPass)
	sc.Step(`^"([^"]*)" calls "([^"]*)" with (\{.*\}) using key "([^"]*)" while the probe holds "([^"]*)"$`, callWhileHeld)
}

// dimensions is what a scenario set of its dimensions.
type dimensions struct {
	protocol string                  // the version every client speaks; "" for the run's
	other    map[string]*wire.Client // by client name: its wire client on the other URL
}

// serves is nil when the target serves an MCP version, else the scenario is
// not applicable: it is for gateways that serve that version, and a gateway
// may serve one only.
func (w *world) serves(version string) error {
	if w.env.Speaks != nil && !w.env.Speaks[version] {
		return w.notApplicable(fmt.Sprintf("for gateways that serve MCP %s; negotiation found the target does not", version))
	}
	return nil
}

// clientsSpeak sets the version every client of the scenario speaks: those
// made already (the Background's principals) and those made later.
func clientsSpeak(ctx context.Context, version string) error {
	w := getWorld(ctx)
	if err := w.serves(version); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dims.protocol = version
	for _, c := range w.clients {
		c.wire.ProtocolVersion = version // its next call connects again, for this version
	}
	return nil
}

// otherURL is who's wire client on the run's second gateway URL (another
// process on the same store), with who's credentials and protocol version
// and a session of its own there.
func (w *world) otherURL(who string) (*wire.Client, error) {
	if !w.has(judge.CapTwoURLs) || len(w.env.URLs) < 2 {
		return nil, w.cannot(judge.CapTwoURLs, "the retry goes to another gateway process")
	}
	c := w.clientFor(who)
	w.mu.Lock()
	defer w.mu.Unlock()
	if wc, ok := w.dims.other[who]; ok {
		return wc, nil
	}
	wc := w.wireOn(who, 1)
	wc.APIKey, wc.PrincipalToken, wc.ProtocolVersion = c.wire.APIKey, c.wire.PrincipalToken, c.wire.ProtocolVersion
	if w.dims.other == nil {
		w.dims.other = map[string]*wire.Client{}
	}
	w.dims.other[who] = wc
	return wc, nil
}

// maxWait bounds one real-time wait: a scenario is a few seconds long,
// and every run of the suite pays its waits.
const maxWait = 10 * time.Second

// secondsPass lets real time pass: the gateway's own clock is not moved
// (a frozen one stays where it is), so a promise kept only for a while (a
// finished key, an in-flight claim) lapses as it would in production, and
// explore's retries spread in time.
func secondsPass(ctx context.Context, n string) error {
	secs, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return fmt.Errorf("seconds %q: %w", n, err)
	}
	d := time.Duration(secs * float64(time.Second))
	if d > maxWait {
		return fmt.Errorf("a wait of %v: a scenario waits %v at most, the suite's time is every run's", d, maxWait)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting %v: %w", d, ctx.Err())
	}
}

// callWhileHeld sends who's call while the probe holds token's dispatch,
// and waits for its answer. A gateway that dispatches the call instead has
// it held at the probe too: the wait then ends as the probe sees the token
// dispatched once more, and the call's answer, which comes once the hold is
// released, is judged by the later steps.
func callWhileHeld(ctx context.Context, who, tool, args, key, tok string) error {
	w := getWorld(ctx)
	if w.env.Probe == nil || !w.has(judge.CapUpstream) {
		return w.cannot(judge.CapUpstream, "the call is made while the probe holds a dispatch")
	}
	token := w.expand(tok)
	before, err := w.env.Probe.Count(ctx, token)
	if err != nil {
		return fmt.Errorf("read the probe: %w", err)
	}
	if err := callInBackground(ctx, who, tool, args, key); err != nil {
		return err
	}
	c := w.clientFor(who)
	wctx, cancel := context.WithTimeout(ctx, w.env.CallTimeout)
	defer cancel()
	again := make(chan error, 1)
	go func() { again <- w.env.Probe.WaitFor(wctx, token, before+1) }()
	select {
	case out := <-c.pending:
		c.pending = nil
		if out.answer == nil {
			return fmt.Errorf("%s's call failed on the wire: %v", who, out.err)
		}
		c.answers = append(c.answers, out.answer)
		return nil
	case err := <-again:
		if err != nil {
			return fmt.Errorf("%s's call got no answer, and the probe saw no dispatch of %s, within %v: %w", who, token, w.env.CallTimeout, err)
		}
		return nil
	}
}
