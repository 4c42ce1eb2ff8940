// Package effects reads a target's own effects: for an MCP server whose
// write tool is the side effect (send_message), there is no upstream to put
// the harness's probe behind, so the count of an operation's effects comes
// from the server's read tool, called with the operation's token (the
// profile's effects block). Unlike the probe's, these counts are what the
// target reports of itself.
package effects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/mcpconform/mcpconform/drivers/target"
	"github.com/mcpconform/mcpconform/drivers/wire"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// Reader counts effects by token through the target's read tool.
type Reader struct {
	client *wire.Client
	fx     target.Effects
	write  string // tools.write, the tool whose effects are read
	count  wire.Path
	// record receives each read's exchange, for the running scenario's
	// evidence; nil between scenarios.
	record atomic.Pointer[func(reports.Exchange)]
	// read is one call of the read tool (Reader.readOnce; a test's fake);
	// gap spaces the reads of one count.
	read func(ctx context.Context, token string) (int, error)
	gap  time.Duration
	// lag is how long a write's effect may take to show (effects.read.lag_ms).
	lag time.Duration
}

// stableReads bounds the reads of one count: a count is taken once two
// reads in a row agree.
const stableReads = 5

// readGap is the pause between two reads of one count: a read tool that
// lags its writes by less shows the write on the second read.
const readGap = 100 * time.Millisecond

// ErrUnstable: the read tool never gave one count twice in a row, so no
// count can be judged (an eventually consistent or flaky read).
var ErrUnstable = errors.New("the read tool's count never settled")

// New is a reader for the profile's effects, calling the read tool at url
// with the profile's first API key.
func New(p *target.Profile, url string) (*Reader, error) {
	if p.Effects == nil {
		return nil, fmt.Errorf("effects reader: the profile has no effects block")
	}
	path, err := wire.ParsePath(p.Effects.Read.Count)
	if err != nil {
		return nil, fmt.Errorf("effects reader: read.count: %w", err)
	}
	c := p.Client(url)
	c.Lane = "effects"
	w, _ := p.Tool(target.RoleWrite)
	r := &Reader{client: c, fx: *p.Effects, count: path, write: w.Name, gap: readGap, lag: p.Effects.Lag()}
	r.read = r.readOnce
	c.Record = func(ex reports.Exchange) {
		if f := r.record.Load(); f != nil {
			(*f)(ex)
		}
	}
	return r, nil
}

// RecordTo sends every later read's exchange to rec (nil: nowhere), so a
// finding shows the reads it rests on beside the calls it judges.
func (r *Reader) RecordTo(rec func(reports.Exchange)) {
	if rec == nil {
		r.record.Store(nil)
		return
	}
	r.record.Store(&rec)
}

// Count is how many effects the read tool shows for token: read until two
// reads in a row agree, at most stableReads times. A read tool backed by
// an eventually consistent store can show a write a moment late, or a
// flaky one flip between counts; one read of it would make a correct
// target fail a count check (a write not yet shown reads as lost). A count
// that never settles, or a read that fails, is an error the steps report
// as a check not observed, never as a count.
func (r *Reader) Count(ctx context.Context, token string) (int, error) {
	seen := make([]int, 0, stableReads)
	for i := range stableReads {
		if i > 0 {
			select {
			case <-time.After(r.gap):
			case <-ctx.Done():
				return 0, fmt.Errorf("read tool %s for %s: %w", r.fx.Read.Tool, token, ctx.Err())
			}
		}
		n, err := r.read(ctx, token)
		if err != nil {
			return 0, err
		}
		if i > 0 && n == seen[i-1] {
			return n, nil
		}
		seen = append(seen, n)
	}
	return 0, fmt.Errorf("read tool %s for %s: counts %v in %d reads %v apart: %w", r.fx.Read.Tool, token, seen, stableReads, r.gap, ErrUnstable)
}

// Lag is how long a write's effect may take to show in the read
// (effects.read.lag_ms): the steps wait at least this long after a
// scenario's last write before a rise is a late dispatch.
func (r *Reader) Lag() time.Duration { return r.lag }

// CountAtLeast is Count for a token of which want writes were answered
// (results the harness saw), the last answer of the scenario's writes at
// since: a read tool that lags (a replica, a queue) shows them up to the
// lag after since, so a count below want is read again until then. Past
// the lag, a count below want is given only when it settles there (a write
// lost for good); one still moving is ErrUnstable, never a count. A count
// at or above want is given at once.
func (r *Reader) CountAtLeast(ctx context.Context, token string, want int, since time.Time) (int, error) {
	deadline := since.Add(r.lag)
	for {
		final := !time.Now().Before(deadline)
		n, err := r.Count(ctx, token)
		switch {
		case err != nil && !errors.Is(err, ErrUnstable):
			return 0, err
		case err == nil && n >= want:
			return n, nil
		case final:
			// Every read of this count came after the lag.
			return n, err
		}
		select {
		case <-time.After(min(r.gap, time.Until(deadline))):
		case <-ctx.Done():
			return 0, fmt.Errorf("read tool %s for %s: %w", r.fx.Read.Tool, token, ctx.Err())
		}
	}
}

// readOnce is one call of the read tool.
//
// Every read carries a key of its own, placed where the profile puts keys:
// the read is a tools/call through the target, and a metered gateway in
// front of the server would replay an unkeyed read from its cache (a
// derived key: the same arguments, the same answer, however many effects
// came since) or refuse it (unkeyed_policy refuse). A fresh key makes each
// read a new operation the tool runs.
func (r *Reader) readOnce(ctx context.Context, token string) (int, error) {
	args, err := r.fx.ReadArgs(token)
	if err != nil {
		return 0, err
	}
	a, err := r.client.CallTool(ctx, wire.Call{Tool: r.fx.Read.Tool, Arguments: args, IdempotencyKey: ReadKey(),
		Label: "effects read " + token, Lane: "effects"})
	if err != nil {
		return 0, fmt.Errorf("call read tool %s for %s: %w", r.fx.Read.Tool, token, err)
	}
	return countIn(a.Message, r.count, r.fx.Read.Tool)
}

// ReadKey is a fresh idempotency key for one read: never a replay.
func ReadKey() string { return "effects-read-" + uuid.NewString() }

// countIn reads the count at path of a read tool's response: a number, or
// a list whose length counts. Anything else (an error answer, a tool
// error, a missing member) is an error, never zero: an unread count must
// not pass a check of "no dispatch".
func countIn(msg json.RawMessage, path wire.Path, tool string) (int, error) {
	var envelope struct {
		Error  *json.RawMessage `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &envelope); err != nil {
		return 0, fmt.Errorf("read tool %s: answer is not JSON-RPC: %w", tool, err)
	}
	if envelope.Error != nil {
		return 0, fmt.Errorf("read tool %s refused: %s", tool, *envelope.Error)
	}
	if envelope.Result != nil && envelope.Result.IsError {
		return 0, fmt.Errorf("read tool %s answered a tool error: %s", tool, msg)
	}
	v, ok := path.Lookup(msg)
	if !ok {
		return 0, fmt.Errorf("read tool %s: nothing at %s in %s", tool, path, msg)
	}
	var n float64
	if json.Unmarshal(v, &n) == nil {
		if n < 0 || n != float64(int(n)) {
			return 0, fmt.Errorf("read tool %s: %s is %v, not a count", tool, path, n)
		}
		return int(n), nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return 0, fmt.Errorf("read tool %s: %s is neither a number nor a list: %s", tool, path, v)
	}
	return len(list), nil
}

// Dispatches are the effects of the tokens, one per effect counted. The
// read tool says how many, not when: each carries the time it was read.
func (r *Reader) Dispatches(ctx context.Context, tokens []string) ([]judge.Dispatch, error) {
	var out []judge.Dispatch
	for _, t := range tokens {
		n, err := r.Count(ctx, t)
		if err != nil {
			return nil, err
		}
		at := time.Now()
		for range n {
			out = append(out, judge.Dispatch{Token: t, Tool: r.write, At: at})
		}
	}
	return out, nil
}

// Quiet waits for quiet: a read tool cannot say when writes stopped
// arriving, so the wait is the whole period, and a later re-read sees
// what came since.
func (r *Reader) Quiet(ctx context.Context, quiet time.Duration) error {
	select {
	case <-time.After(quiet):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
