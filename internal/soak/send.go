package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mcpconform/mcpconform/drivers/wire"
)

// abandon says whether and how the client gives up on a call.
type abandon struct {
	afterSend bool          // close the connection once the request is written
	after     time.Duration // else, when positive: stop waiting after this long
}

var (
	keep             = abandon{}
	abandonAfterSend = abandon{afterSend: true}
)

func abandonAfter(d time.Duration) abandon { return abandon{after: d} }

// The error reasons the soak expects (docs/wire.md).
const (
	reasonInProgress     = "idempotency_in_progress"
	reasonDispatchFailed = "dispatch_failed" // failed before dispatch, refunded
)

// send makes one call of an operation to process proc and classifies what
// came back. Each call takes the client's next JSON-RPC id, so a retry is a
// new request, as a real client's is.
func (r *runner) send(ctx context.Context, w *wallet, proc int, call wire.Call, how abandon) Attempt {
	r.calls.Add(1)
	call.DropAfterSend = how.afterSend
	timeout := callTimeout
	if how.after > 0 {
		timeout = how.after
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	a, err := w.clients[proc].CallTool(cctx, call)
	lat := time.Since(t0)
	// Whatever the error says (a cancelled dial, a body cut mid-read), a
	// call whose own short timeout passed was given up by the client.
	gaveUp := how.after > 0 && cctx.Err() != nil && ctx.Err() == nil
	at := classify(ctx, proc, a, err, how, gaveUp, lat)
	at.Start, at.End = t0, t0.Add(lat)
	if a != nil {
		at.Status = a.Status
	}
	return at
}

// classify turns an answer into an Attempt. ctx is the soak's: a call cut
// off because the soak ran out of time is abandoned, not the gateway's fault.
// It reads the live answer through wire.Answer's parser, and answers what
// only a live call can (was it given up, is the refusal retryable), in the
// Kind values its history stores; reports.Answer is the classifier of
// recorded answers (an evidence Exchange's status and body).
func classify(ctx context.Context, proc int, a *wire.Answer, err error, how abandon, gaveUp bool, lat time.Duration) Attempt {
	at := Attempt{Proc: proc, Latency: lat}
	switch {
	case how.afterSend && err == nil && a != nil && a.Dropped:
		at.Kind, at.Latency, at.Detail = KindAbandoned, 0, "closed after sending"
	case err != nil && gaveUp:
		at.Kind, at.Latency, at.Detail = KindAbandoned, 0, fmt.Sprintf("gave up after %v", how.after)
	case err != nil && ctx.Err() != nil:
		at.Kind, at.Latency, at.Detail = KindAbandoned, 0, "soak deadline: "+ctx.Err().Error()
	case err != nil:
		at.Kind, at.Detail = KindTransport, err.Error()
	case a.HasError():
		at.Reason, at.Retryable, at.Receipt = a.ErrorReason(), a.Retryable(), a.ErrorReceipt()
		at.Kind, at.Detail = KindError, fmt.Sprintf("http %d, code %d: %s", a.Status, a.ErrorCode(), a.ErrorMessage())
		if at.Reason == reasonInProgress && at.Retryable {
			at.Kind, at.Detail = KindInProgress, ""
		}
	case a.Response == nil || a.Result() == nil:
		at.Kind, at.Detail = KindError, fmt.Sprintf("http %d without a JSON-RPC result: %.200s", a.Status, a.Body)
	default:
		at.Kind, at.Receipt, at.IsError, at.Result = KindResult, a.Receipt(), a.IsError(), a.ResultValue()
		var res struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(a.StructuredContent(), &res) // a result without it is reported as foreign
		at.Token = res.Token
		if at.IsError {
			at.Detail = a.Text()
		}
	}
	return at
}

// sendTwins sends the same call to two processes at once: both requests
// wait at a barrier and are released together.
func (r *runner) sendTwins(ctx context.Context, w *wallet, p1, p2 int, call wire.Call) []Attempt {
	out := make([]Attempt, 2)
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for i, proc := range []int{p1, p2} {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-release
			out[i] = r.send(ctx, w, proc, call, keep)
		})
	}
	ready.Wait()
	close(release)
	done.Wait()
	return out
}
