package probe

import (
	"context"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// Upstream is a probe the harness observes: in-process (Local) or another
// process's (Remote).
type Upstream interface {
	URL() string // the MCP endpoint a gateway's upstream should point at
	// Count is how many dispatches carried token; "" counts every dispatch.
	Count(ctx context.Context, token string) (int, error)
	Dispatches(ctx context.Context, tokenPrefix string) ([]judge.Dispatch, error) // arrival order; "" = all
	WaitFor(ctx context.Context, token string, n int) error                       // until >= n dispatches of token
	Stall(ctx context.Context, token string) error
	Unstall(ctx context.Context, token string) error
	// Fail makes the next dispatch of token fail: FailToolError or FailRefuse.
	Fail(ctx context.Context, token, how string) error
	// Quiet returns once no dispatch whose token starts with tokenPrefix has arrived for `quiet`
	// (a late duplicate dispatch must be seen before effects are judged), or ctx's error.
	Quiet(ctx context.Context, tokenPrefix string, quiet time.Duration) error
	Close() error // Local: stops the server; Remote: releases nothing remote, just the client
}

// Forgetter is what a run calls when it ends, on either kind of probe (a
// type assertion on an Upstream): it drops the run's tokens.
type Forgetter interface {
	Forget(ctx context.Context, tokenPrefix string) error
}

// Local is p as an Upstream. Close stops p.
func Local(p *Probe) Upstream { return local{p} }

type local struct{ p *Probe }

var (
	_ Upstream  = local{}
	_ Forgetter = local{}
	_ Upstream  = (*Remote)(nil)
	_ Forgetter = (*Remote)(nil)
)

func (l local) URL() string { return l.p.URL() }

func (l local) Count(ctx context.Context, token string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return l.p.Count(token), nil
}

func (l local) Dispatches(ctx context.Context, tokenPrefix string) ([]judge.Dispatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.p.dispatchesWith(tokenPrefix), nil
}

func (l local) WaitFor(ctx context.Context, token string, n int) error {
	return l.p.WaitFor(ctx, token, n)
}

func (l local) Stall(ctx context.Context, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.p.Stall(token)
	return nil
}

func (l local) Unstall(ctx context.Context, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.p.Unstall(token)
	return nil
}

func (l local) Fail(ctx context.Context, token, how string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.p.Fail(token, how)
}

func (l local) Quiet(ctx context.Context, tokenPrefix string, quiet time.Duration) error {
	return l.p.Quiet(ctx, tokenPrefix, quiet)
}

func (l local) Forget(ctx context.Context, tokenPrefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.p.Forget(tokenPrefix)
	return nil
}

func (l local) Close() error { return l.p.Close() }
