package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite bench/testdata golden files")

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value, p50", ms(7), 50, 7 * time.Millisecond},
		{"one value, p99", ms(7), 99, 7 * time.Millisecond},
		{"p0 is the minimum", ms(1, 2, 3), 0, 1 * time.Millisecond},
		{"p100 is the maximum", ms(1, 2, 3), 100, 3 * time.Millisecond},
		{"p50 of an even count is the lower middle", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p50 of an odd count is the middle", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"p99 of 100 values is the 99th", hundred, 99, 99 * time.Millisecond},
		{"p50 of 100 values is the 50th", hundred, 50, 50 * time.Millisecond},
		{"p99 of 10 values is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p90 of 10 values is the 9th", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{"p above 100 is the maximum", ms(1, 2), 150, 2 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(c.sorted, c.p); got != c.want {
			t.Errorf("%s: Percentile(%v, %v) = %v, want %v", c.name, c.sorted, c.p, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	// Unsorted input, not modified.
	in := ms(40, 10, 30, 20)
	s := Summarize(in, 2, "boom", 2*time.Second)
	if s.Calls != 4 || s.Errors != 2 || s.FirstError != "boom" || s.Rate != 2 {
		t.Errorf("Summarize = %+v, want 4 calls, 2 errors, rate 2/s", s)
	}
	if s.P50 != 20*time.Millisecond || s.P99 != 40*time.Millisecond {
		t.Errorf("p50, p99 = %v, %v; want 20ms, 40ms", s.P50, s.P99)
	}
	if in[0] != 40*time.Millisecond {
		t.Errorf("Summarize sorted its input: %v", in)
	}
	if z := Summarize(nil, 0, "", 0); z.Rate != 0 || z.P50 != 0 {
		t.Errorf("Summarize(nil) = %+v", z)
	}
}

func TestFitLine(t *testing.T) {
	f := FitLine([]float64{9, 18, 36}, []time.Duration{3 * time.Second, 5 * time.Second, 9 * time.Second})
	want := Fit{Fixed: 1 * time.Second, PerUnit: time.Second * 2 / 9, OK: true}
	if !f.OK || (f.Fixed-want.Fixed).Abs() > time.Microsecond || (f.PerUnit-want.PerUnit).Abs() > time.Microsecond {
		t.Errorf("FitLine = %+v, want %+v", f, want)
	}
	if FitLine([]float64{8, 8}, []time.Duration{1, 2}).OK {
		t.Error("FitLine with one distinct x claims a fit")
	}
}

func TestStride(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	if got := Stride(ids, 4); !equal(got, []string{"a", "c", "e", "g"}) {
		t.Errorf("Stride(8 ids, 4) = %v", got)
	}
	if got := Stride(ids, 20); !equal(got, ids) {
		t.Errorf("Stride(8 ids, 20) = %v", got)
	}
}

func TestBackoff(t *testing.T) {
	for attempt, want := range []time.Duration{10, 20, 40, 80, 160, 320, 320} {
		want *= time.Millisecond
		if lo, hi := Backoff(attempt, 0), Backoff(attempt, 0.999999); lo != want/2 || hi >= want || hi < lo {
			t.Errorf("Backoff(%d) spans [%v, %v], want [%v, %v)", attempt, lo, hi, want/2, want)
		}
	}
}

func TestDecodeReply(t *testing.T) {
	r, err := decodeReply(200, []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false,"_meta":{"io.mcpconform/receipt":{"id":"rcpt-1","replayed":true}}}}`))
	if err != nil || !r.Result() || r.Receipt != "rcpt-1" || !r.Replayed {
		t.Errorf("result: %+v, %v", r, err)
	}
	r, err = decodeReply(200, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"wait","data":{"reason":"idempotency_in_progress","retryable":true}}}`))
	if err != nil || !r.InProgress() || r.Result() {
		t.Errorf("in progress: %+v, %v", r, err)
	}
	if _, err := decodeReply(400, []byte("Bad Request")); err == nil {
		t.Error("a plain-text answer decoded")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sample is a fixed Results covering every part of the page: both stores
// (one not measured), a missed and a met target, storms, and the harness.
func sample() Results {
	st := func(name string, rate float64, p50, p99 int) Stats {
		return Stats{Name: name, Calls: int(rate * 3), Elapsed: 3 * time.Second, Rate: rate,
			P50: time.Duration(p50) * time.Microsecond, P99: time.Duration(p99) * time.Microsecond}
	}
	suite := SuiteRun{Label: "full suite", Store: SQLite, Scenarios: 36, Concurrency: 64, Wall: 34 * time.Second, Passed: 33, Failed: 1, Skipped: 2}
	return Results{
		Date: time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC), Wall: 200 * time.Second,
		Machine:      Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", NumCPU: 2, GOMAXPROCS: 2, CPU: "Some | CPU"},
		Setup:        Setup{Concurrency: 8, Warmup: 300 * time.Millisecond, Duration: 3 * time.Second, StormN: 256},
		Baseline:     st(PhaseBaseline, 1800, 3900, 12300),
		BaselineRuns: []Stats{st(PhaseBaseline, 1700, 4000, 13000), st(PhaseBaseline, 1800, 3900, 12300)},
		Stores: []StoreResults{
			{Store: SQLite, Measured: true,
				Phases: []Stats{
					st(PhaseKeyedFirst, 200, 9400, 434000),
					st(PhaseKeyedReplay, 1200, 6100, 17000),
					st(PhaseUnkeyed, 160, 10600, 450000),
					st(PhaseKeyedSerial, 190, 4600, 12200),
					{Name: PhaseReadOnly, Calls: 600, Errors: 3, FirstError: "read-only keyed call: http 200, error -32005 idempotency_in_progress",
						Elapsed: 3 * time.Second, Rate: 200, P50: 9 * time.Millisecond, P99: 243 * time.Millisecond},
				},
				Storms: []Storm{
					{Keyed: true, N: 256, Answered: 736 * time.Millisecond, Settled: 736 * time.Millisecond, Fresh: 1, Replayed: 255, Receipts: 1, Dispatches: 1, Debits: 1},
					{Keyed: false, N: 256, Answered: 5700 * time.Millisecond, Settled: 10 * time.Second, Fresh: 1, Replayed: 4, InProgress: 251, Receipts: 1, Unsettled: 32, Dispatches: 1, Debits: 1},
				},
				Rounds: []Round{
					{Baseline: st(PhaseBaseline, 1800, 3900, 12300), First: st(PhaseKeyedFirst, 500, 9000, 30000), Replay: st(PhaseKeyedReplay, 1000, 5000, 15000)},
					{Baseline: st(PhaseBaseline, 2000, 3800, 12000), First: st(PhaseKeyedFirst, 600, 8800, 29000), Replay: st(PhaseKeyedReplay, 900, 5200, 16000)},
					{Baseline: st(PhaseBaseline, 1600, 4100, 13000), First: st(PhaseKeyedFirst, 400, 9900, 35000), Replay: st(PhaseKeyedReplay, 1000, 5100, 15500)},
				},
				Suite: &suite},
			{Store: PostgreSQL, Reason: "DATABASE_URL is not set"},
		},
		Scaling: []SuiteRun{
			{Label: "9 of 36 scenarios", Store: SQLite, Scenarios: 9, Concurrency: 64, Wall: 10 * time.Second, Passed: 9},
			{Label: "18 of 36 scenarios", Store: SQLite, Scenarios: 18, Concurrency: 64, Wall: 18 * time.Second, Passed: 17, Failed: 1},
			suite,
		},
		Twins: []SuiteRun{
			{Label: "twins-01, 8 twins", Store: SQLite, Scenarios: 1, Concurrency: 8, Wall: 1500 * time.Millisecond, Passed: 1},
			{Label: "twins-01, 32 twins", Store: SQLite, Scenarios: 1, Concurrency: 32, Wall: 2100 * time.Millisecond, Passed: 1},
			{Label: "twins-01, 64 twins", Store: SQLite, Concurrency: 64, Wall: 90 * time.Millisecond, Err: "set-up: start reference gateway: boom"},
		},
	}
}

func TestRenderGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, sample()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "results.golden.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./bench -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("Render differs from %s (go test ./bench -update rewrites it); got:\n%s", golden, b.String())
	}
}

func TestTargets(t *testing.T) {
	got := map[string]bool{}
	measured := 0
	for _, tg := range Targets(sample()) {
		got[tg.Name] = tg.Met
		if tg.Measured {
			measured++
		}
	}
	want := map[string]bool{
		"keyed first calls on SQLite ≥ 1/3 of the bare server's rate":                             false, // rounds: median 500/1800
		"keyed replays on SQLite ≥ 1/2 of the bare server's rate":                                 true,  // rounds: median 1000/1800
		"keyed twin storm of 256 on SQLite answered within 2.00 s, one dispatch, one debit":       true,
		"unkeyed twin storm of 256 on SQLite answered within 2.00 s, one dispatch, one debit":     false, // 5.7 s
		"keyed twin storm of 256 on PostgreSQL answered within 2.00 s, one dispatch, one debit":   false,
		"unkeyed twin storm of 256 on PostgreSQL answered within 2.00 s, one dispatch, one debit": false,
	}
	for name, met := range want {
		if g, ok := got[name]; !ok || g != met {
			t.Errorf("target %q: met %v (present %v), want %v; all: %v", name, g, ok, met, got)
		}
	}
	if measured != 4 {
		t.Errorf("%d targets measured, want 4 (PostgreSQL is not)", measured)
	}
}

// TestTargetsRounds: with interleaved rounds the targets use the median of
// the rounds' own ratios, whatever the phase table against the fastest
// baseline says; without rounds, the phase table decides.
func TestTargetsRounds(t *testing.T) {
	round := func(bl, first, replay float64) Round {
		return Round{Baseline: Stats{Calls: 1, Rate: bl}, First: Stats{Calls: 1, Rate: first}, Replay: Stats{Calls: 1, Rate: replay}}
	}
	const firstTarget = "keyed first calls on SQLite ≥ 1/3 of the bare server's rate"
	for _, tc := range []struct {
		name   string
		rounds []Round
		want   bool
		got    string
	}{
		{"no rounds: the phase table (200 against 1800)", nil, false, "0.11× (200/s vs 1800/s)"},
		{"median of three meets it", []Round{round(3000, 900, 2000), round(2400, 1000, 2000), round(2000, 800, 1500)}, true,
			"median 0.40× of 3 interleaved rounds (0.30×, 0.42×, 0.40×)"},
		{"median of three misses it", []Round{round(3000, 900, 2000), round(2400, 1000, 2000), round(3000, 800, 1500)}, false,
			"median 0.30× of 3 interleaved rounds (0.30×, 0.42×, 0.27×)"},
		{"even count: the mean of the middle two", []Round{round(3000, 900, 2000), round(2000, 800, 1500)}, true,
			"median 0.35× of 2 interleaved rounds (0.30×, 0.40×)"},
		{"a round without first calls counts as 0", []Round{round(3000, 0, 2000), round(2000, 800, 1500), {Baseline: Stats{Calls: 1, Rate: 2000}}}, false,
			"median 0.00× of 3 interleaved rounds (0.00×, 0.40×, 0.00×)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Stores[0].Rounds = tc.rounds
			for _, tg := range Targets(r) {
				if tg.Name != firstTarget {
					continue
				}
				if tg.Met != tc.want || tg.Got != tc.got {
					t.Errorf("met %v, got %q; want %v, %q", tg.Met, tg.Got, tc.want, tc.got)
				}
				return
			}
			t.Fatal("no first-call target")
		})
	}
}
