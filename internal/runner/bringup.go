package runner

import (
	"context"

	"github.com/mcpconform/mcpconform/reports"
	"github.com/mcpconform/mcpconform/steps"
)

// BringUp starts what a run starts before its first scenario (the probe,
// the identity provider, the target) and makes the same preflight, for
// commands that drive the target themselves (mcpconform bench): they then
// reach the gateway and the probe exactly as run does. stop ends them all.
func BringUp(ctx context.Context, cfg Config) (env *steps.Env, stop func(), tgt reports.Target, err error) {
	return bringUp(ctx, cfg)
}
