package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WaitEvery is how often SampleWaits looks at the server's sessions.
const WaitEvery = 5 * time.Millisecond

// SampleWaits samples, every WaitEvery until ctx ends, what the sessions
// named app (application_name) are doing (pg_stat_activity): waiting on a row
// lock, on the client, on I/O, or running. A row lock queue shows as
// Lock:transactionid or Lock:tuple, a gateway slow to send its next
// statement as Client:ClientRead inside a transaction. The shares are of
// the sessions seen over all samples; idle sessions outside a transaction
// are not counted. Other sessions of the database (other tests on a shared
// server) are not looked at.
func SampleWaits(ctx context.Context, dsn, app string) ([]Share, error) {
	conn, err := pgx.Connect(context.WithoutCancel(ctx), dsn)
	if err != nil {
		return nil, fmt.Errorf("wait sampler: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	counts := map[string]float64{}
	var seen float64
	tick := time.NewTicker(WaitEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return top(counts, seen), nil
		case <-tick.C:
		}
		rows, err := conn.Query(context.WithoutCancel(ctx), `SELECT state, coalesce(wait_event_type, ''), coalesce(wait_event, '')
			FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app)
		if err != nil {
			return nil, fmt.Errorf("wait sampler: %w", err)
		}
		for rows.Next() {
			var state, typ, ev string
			if err := rows.Scan(&state, &typ, &ev); err != nil {
				rows.Close()
				return nil, fmt.Errorf("wait sampler: %w", err)
			}
			if state == "idle" {
				continue
			}
			k := state
			if typ != "" {
				k += " " + typ + ":" + ev
			}
			counts[k]++
			seen++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("wait sampler: %w", err)
		}
	}
}
