package bench

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	goldenfile "github.com/mcpconform/mcpconform/internal/golden"

	"github.com/google/pprof/profile"
)

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
	want := Fit{Fixed: 1 * time.Second, PerUnit: time.Second * 2 / 9}
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
// (one not measured), met and missed targets, the scale table, a profile,
// storms, and the harness.
func sample() Results {
	st := func(name string, rate float64, p50, p99 int) Stats {
		return Stats{Name: name, Calls: int(rate * 3), Elapsed: 3 * time.Second, Rate: rate,
			P50: time.Duration(p50) * time.Microsecond, P99: time.Duration(p99) * time.Microsecond}
	}
	round := func(bl, first, replay, unkeyed float64, unkeyedP99 int, spread float64) Round {
		return Round{Baseline: st(PhaseBaseline, bl, 3900, 12300), First: st(PhaseKeyedFirst, first, 9000, 30000),
			Replay: st(PhaseKeyedReplay, replay, 5000, 15000), Unkeyed: st(PhaseUnkeyed, unkeyed, 10000, unkeyedP99),
			Spread: st(PhaseSpread, spread, 8000, 25000),
			// The store alone at half, five times and two thirds of the
			// bare server's rate: ideals of a third, five sixths and two
			// fifths of it.
			Store: &StoreRound{First: st(PhaseStoreFirst, bl/2, 1000, 4000), Replay: st(PhaseStoreReplay, bl*5, 200, 900),
				Unkeyed: st(PhaseStoreUnkeyed, bl*2/3, 1500, 6000)}}
	}
	// The last round metered, one phase on saturated cores, one phase's
	// figure missing.
	lastRound := round(1600, 400, 1600, 1000, 40000, 500)
	lastRound.Store.Unkeyed.Errors, lastRound.Store.Unkeyed.FirstError = 2, "reserve slot: store busy: lock timeout"
	lastRound.Cores = map[string]CPUUse{
		PhaseBaseline:    {Wall: 3 * time.Second, Self: 1.62, Of: 2},
		PhaseKeyedFirst:  {Wall: 3 * time.Second, Self: 1.95, Of: 2},
		PhaseKeyedReplay: {Wall: 3 * time.Second, Self: 1.31, Of: 2},
		PhaseUnkeyed:     {Wall: 3 * time.Second, Self: 1.5, Of: 2},
	}
	suite := SuiteRun{Label: "full suite", Store: SQLite, Scenarios: 36, Concurrency: 64, Wall: 34 * time.Second, Passed: 33, Failed: 1, Skipped: 2}
	scale := func(procs, clients int, rate float64) ScalePoint {
		return ScalePoint{Store: SQLite, Processes: procs, Clients: clients, Stats: st(PhaseKeyedFirst, rate, 4000*clients, 9000*clients)}
	}
	return Results{
		Date: time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC), Wall: 200 * time.Second,
		Machine: Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", NumCPU: 2, GOMAXPROCS: 2, CPU: "Some | CPU",
			PostgreSQL: "none: DATABASE_URL is not set"},
		Setup:        Setup{Concurrency: 8, Warmup: 300 * time.Millisecond, Duration: 3 * time.Second, StormN: 256},
		Baseline:     st(PhaseBaseline, 1800, 3900, 12300),
		BaselineRuns: []Stats{st(PhaseBaseline, 1700, 4000, 13000), st(PhaseBaseline, 1800, 3900, 12300)},
		Stores: []StoreResults{
			{Store: SQLite, Measured: true,
				Phases: []Stats{
					{Name: PhaseReadOnly, Calls: 600, Errors: 3, FirstError: "read-only keyed call: http 200, error -32005 idempotency_in_progress",
						Elapsed: 3 * time.Second, Rate: 200, P50: 9 * time.Millisecond, P99: 243 * time.Millisecond},
				},
				Storms: []Storm{
					{Keyed: true, N: 256, Answered: 736 * time.Millisecond, Settled: 736 * time.Millisecond, Fresh: 1, Replayed: 255, Receipts: 1, Dispatches: 1, Debits: 1},
					{Keyed: false, N: 256, Answered: 5700 * time.Millisecond, Settled: 10 * time.Second, Fresh: 1, Replayed: 4, InProgress: 251, Receipts: 1, Unsettled: 32, Dispatches: 1, Debits: 1},
				},
				// keyed first: 0.28, 0.30, 0.25 (missed); replays 0.94, 0.90, 1.00 (met);
				// unkeyed 0.56, 0.50, 0.63 with p99 2.4×, 4.9×, 3.3× (met: medians 0.56, 3.3×);
				// hot wallet 0.83, 0.75, 0.80 (met: median 0.80).
				Rounds: []Round{
					round(1800, 500, 1700, 1000, 30000, 600),
					round(2000, 600, 1800, 1000, 60000, 800),
					lastRound,
				},
				RoundDatabases: "Every round runs on a fresh database file.",
				Scale:          []ScalePoint{scale(1, 1, 190), scale(1, 2, 250), scale(1, 8, 200)},
				Profiles: []Profiled{{Store: SQLite, Phase: PhaseKeyedFirst, Rate: 480, CPUFile: "/x/sqlite-keyed-first-calls.cpu.pb.gz", BlockFile: "/x/sqlite-keyed-first-calls.block.pb.gz",
					CPUTotal: 5.9, CPU: []Share{{"runtime", 3, 0.5}, {"modernc.org/sqlite/lib", 1.2, 0.2}},
					CPUCum:     []Share{{"net/http", 4, 0.68}, {"github.com/mcpconform/mcpconform/reference/store/sqlite", 2, 0.34}},
					BlockTotal: 2.5, Block: []Share{{"github.com/mcpconform/mcpconform/reference/store/sqlite", 2, 0.8}},
					Cores: CPUUse{Wall: 3 * time.Second, Self: 1.86, Of: 2}},
					{Store: SQLite, Phase: PhaseUnkeyed, Err: "cpu profile: cpu profiling already in use"}},
				Suite: &suite},
			{Store: PostgreSQL, Reason: "DATABASE_URL is not set"},
		},
		Scaling: []SuiteRun{
			{Label: "9 of 36 scenarios", Store: SQLite, Scenarios: 9, Concurrency: 64, Wall: 10 * time.Second, Passed: 9},
			{Label: "18 of 36 scenarios", Store: SQLite, Scenarios: 18, Concurrency: 64, Wall: 18 * time.Second, Passed: 17, Failed: 1},
			suite,
		},
		Allocs: []CallAllocs{{Phase: PhaseKeyedFirst, Calls: 500, AllocsPerOp: 430.2, BytesPerOp: 21161},
			{Phase: PhaseKeyedReplay, Calls: 500, AllocsPerOp: 209.8, BytesPerOp: 9809}},
		AllocsErr: "call allocations: unkeyed calls: store busy",
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
	goldenfile.Equal(t, filepath.Join("testdata", "results.golden.md"), b.Bytes())
}

func TestTargets(t *testing.T) {
	got := map[string]bool{}
	measured := 0
	for _, tg := range Targets(sample()) {
		got[tg.Store+": "+tg.Name] = tg.Met
		if tg.Measured {
			measured++
		}
	}
	want := map[string]bool{
		"SQLite: keyed first calls ≥ 0.85× their same-run ideal":                                                           false,
		"SQLite: keyed replays ≥ 0.85× their same-run ideal":                                                               true,
		"SQLite: unkeyed calls ≥ 0.85× their same-run ideal, p99 ≤ 4× the bare server's p99":                               true,
		"SQLite: hot wallet: keyed first calls on one wallet ≥ 0.80× their rate on one wallet per client":                  true, // median 0.80
		"SQLite: keyed twin storm of 256 answered within 2.00 s, one dispatch, one debit":                                  true,
		"SQLite: unkeyed twin storm of 256 answered within 2.00 s, one dispatch, one debit":                                false, // 5.7 s
		"PostgreSQL: keyed first calls ≥ 0.85× their same-run ideal":                                                       false,
		"PostgreSQL: unkeyed twin storm of 256 answered within 2.00 s, one dispatch, one debit, all settled within 1.00 s": false,
	}
	for name, met := range want {
		if g, ok := got[name]; !ok || g != met {
			t.Errorf("target %q: met %v (present %v), want %v; all: %v", name, g, ok, met, got)
		}
	}
	if measured != 6 {
		t.Errorf("%d targets measured, want 6 (PostgreSQL's are not)", measured)
	}
	if got, want := MissedPhases(sample().Stores[0], 256), []string{PhaseKeyedFirst}; !equal(got, want) {
		t.Errorf("MissedPhases = %v, want %v", got, want)
	}
}

// TestTargetsRounds: each rate target is the median of the rounds' own
// ratios; the unkeyed one needs its p99 too, and the hot-wallet one sets
// one wallet against one wallet per client within each round.
func TestTargetsRounds(t *testing.T) {
	// The store alone as fast as the bare server: each round's ideal is
	// half the bare server's rate.
	round := func(bl, first, unkeyed float64, blP99, unkeyedP99 time.Duration, spread float64) Round {
		alone := Stats{Calls: 1, Rate: bl}
		return Round{Baseline: Stats{Calls: 1, Rate: bl, P99: blP99}, First: Stats{Calls: 1, Rate: first},
			Replay: Stats{Calls: 1, Rate: bl}, Unkeyed: Stats{Calls: 1, Rate: unkeyed, P99: unkeyedP99}, Spread: Stats{Calls: 1, Rate: spread},
			Store: &StoreRound{First: alone, Replay: alone, Unkeyed: alone}}
	}
	ms := time.Millisecond
	cases := []struct {
		name   string
		target string
		rounds []Round
		want   bool
		got    string
	}{
		{"first calls: median of three meets it", "keyed first calls ≥ 0.85× their same-run ideal",
			[]Round{round(3000, 1350, 0, ms, ms, 1), round(2000, 800, 0, ms, ms, 1), round(2000, 900, 0, ms, ms, 1)}, true,
			"median 0.90× of 3 interleaved rounds (0.90×, 0.80×, 0.90×); 0.45× the bare server's rate"},
		{"first calls: even count is the mean of the middle two", "keyed first calls ≥ 0.85× their same-run ideal",
			[]Round{round(3000, 1300, 0, ms, ms, 1), round(2000, 800, 0, ms, ms, 1)}, false,
			"median 0.83× of 2 interleaved rounds (0.87×, 0.80×); 0.42× the bare server's rate"},
		{"first calls: no store alone, no ideal", "keyed first calls ≥ 0.85× their same-run ideal",
			[]Round{{Baseline: Stats{Calls: 1, Rate: 2000}, First: Stats{Calls: 1, Rate: 1900}}}, false,
			"not measured: the store alone was not measured in any round (mcpbench -limits=false), so there is no ideal"},
		{"unkeyed: rate met, p99 missed", "unkeyed calls ≥ 0.85× their same-run ideal, p99 ≤ 4× the bare server's p99",
			[]Round{round(2000, 0, 1000, 10*ms, 50*ms, 1), round(2000, 0, 900, 10*ms, 45*ms, 1), round(2000, 0, 850, 10*ms, 30*ms, 1)}, false,
			"median 0.90× of 3 interleaved rounds (1.00×, 0.90×, 0.85×); 0.45× the bare server's rate; p99 median 4.50× of the bare server's (5.00×, 4.50×, 3.00×)"},
		{"unkeyed: a round without calls counts as 0 and an infinite p99", "unkeyed calls ≥ 0.85× their same-run ideal, p99 ≤ 4× the bare server's p99",
			[]Round{round(2000, 0, 1000, 10*ms, 20*ms, 1), {Baseline: Stats{Calls: 1, Rate: 2000, P99: 10 * ms}}, round(2000, 0, 900, 10*ms, 30*ms, 1)}, true,
			"median 0.90× of 3 interleaved rounds (1.00×, 0.00×, 0.90×); 0.45× the bare server's rate; p99 median 3.00× of the bare server's (2.00×, –, 3.00×)"},
		{"hot wallet: one wallet against one wallet per client", "hot wallet: keyed first calls on one wallet ≥ 0.80× their rate on one wallet per client",
			[]Round{round(2000, 700, 0, ms, ms, 1000), round(2000, 900, 0, ms, ms, 1000), round(2000, 700, 0, ms, ms, 800)}, true,
			"median 0.88× of 3 interleaved rounds (0.70×, 0.90×, 0.88×)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Stores[0].Rounds = tc.rounds
			for _, tg := range Targets(r) {
				if tg.Store != SQLite || tg.Name != tc.target {
					continue
				}
				if tg.Met != tc.want || tg.Got != tc.got {
					t.Errorf("met %v, got %q; want %v, %q", tg.Met, tg.Got, tc.want, tc.got)
				}
				return
			}
			t.Fatalf("no target %q", tc.target)
		})
	}
}

func TestPackage(t *testing.T) {
	cases := []struct{ fn, pkg string }{
		{"runtime.park_m", "runtime"},
		{"github.com/jackc/pgx/v5/pgconn.(*PgConn).ReceiveMessage", "github.com/jackc/pgx/v5/pgconn"},
		{"modernc.org/sqlite/lib._sqlite3VdbeExec", "modernc.org/sqlite/lib"},
		{"main.measureStore.func3", "main"},
		{"aeshashbody", "aeshashbody"}, // an assembly routine has no package in its name
	}
	for _, c := range cases {
		if got := Package(c.fn); got != c.pkg {
			t.Errorf("Package(%q) = %q, want %q", c.fn, got, c.pkg)
		}
	}
}

func TestProfileNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		pr   Profiled
		hot  float64 // the store's median hot-wallet ratio
		want string  // a part of the note; "" for none
	}{
		{"postgres row locks and WAL flushes", Profiled{Store: PostgreSQL, Phase: PhaseKeyedFirst,
			DBWaits: []Share{{"active Lock:transactionid", 40, 0.4}, {"active LWLock:WALWrite", 20, 0.2}, {"active", 40, 0.4}}},
			0.5, "row lock in 40% of the samples and on the WAL flush of a commit in 20%"},
		{"postgres row locks, the wallet split first", Profiled{Store: PostgreSQL, Phase: PhaseKeyedFirst,
			DBWaits: []Share{{"active Lock:transactionid", 40, 0.4}, {"active LWLock:WALWrite", 20, 0.2}, {"active", 40, 0.4}}},
			0.5, "its balance split over a few rows"},
		{"postgres row locks, one wallet as fast as many", Profiled{Store: PostgreSQL, Phase: PhaseKeyedFirst,
			DBWaits: []Share{{"active Lock:transactionid", 40, 0.4}, {"active LWLock:WALWrite", 20, 0.2}, {"active", 40, 0.4}}},
			0.9, "one wallet runs at 0.90× the rate of a wallet per client, so the wallet's row is not what bounds the calls"},
		{"postgres mostly running", Profiled{Store: PostgreSQL, Phase: PhaseUnkeyed,
			DBWaits: []Share{{"active", 80, 0.8}, {"active Client:ClientRead", 20, 0.2}}}, 0, ""},
		{"replays: reads and the MCP stack", Profiled{Store: PostgreSQL, Phase: PhaseKeyedReplay,
			CPUCum: []Share{{"github.com/modelcontextprotocol/go-sdk/mcp", 1, 0.42}, {"github.com/mcpconform/mcpconform/reference/wire", 1, 0.45}}},
			0, "two store round trips. go-sdk's server and the gateway's wire layer are on 45% of the CPU samples' stacks"},
		{"sqlite writer queue", Profiled{Store: SQLite, Phase: PhaseUnkeyed,
			Block: []Share{{"github.com/mcpconform/mcpconform/reference/store/sqlite", 3, 0.75}}}, 0, "75% of the gateway's waiting"},
		{"sqlite waits elsewhere", Profiled{Store: SQLite, Phase: PhaseUnkeyed,
			Block: []Share{{"modernc.org/sqlite", 3, 0.75}}}, 0, ""},
		{"postgres saturated: the cores, whatever the waits", Profiled{Store: PostgreSQL, Phase: PhaseKeyedFirst,
			DBWaits: []Share{{"active Lock:transactionid", 40, 0.4}, {"active LWLock:WALWrite", 20, 0.2}, {"active", 40, 0.4}},
			Cores:   CPUUse{Wall: time.Second, Self: 1.31, DB: true, DBCores: 0.58, Of: 2}},
			0.5, "the machine's cores were saturated: the bench process (the load client and the gateway) used 1.31 cores and PostgreSQL's server processes 0.58, 1.89 of 2"},
		{"postgres saturated, the server using most", Profiled{Store: PostgreSQL, Phase: PhaseUnkeyed,
			Cores: CPUUse{Wall: time.Second, Self: 0.7, DB: true, DBCores: 1.2, Of: 2}},
			0, "less CPU per call, first in PostgreSQL's server processes, which used the most"},
		{"postgres saturated, the bench process using most", Profiled{Store: PostgreSQL, Phase: PhaseKeyedReplay,
			Cores: CPUUse{Wall: time.Second, Self: 1.2, DB: true, DBCores: 0.7, Of: 2}},
			0, "CPU-bound, whatever its waits show (whoever holds a lock or flushes a commit waits for a core too): what would meet the target is less CPU per call, first in the bench process, which used the most"},
		{"a saturated replay keeps its breakdown", Profiled{Store: PostgreSQL, Phase: PhaseKeyedReplay,
			Cores: CPUUse{Wall: time.Second, Self: 1.2, DB: true, DBCores: 0.7, Of: 2}},
			0, "the load client's share is the bench's own). A replay writes nothing"},
		{"postgres with room left: the waits speak", Profiled{Store: PostgreSQL, Phase: PhaseKeyedFirst,
			DBWaits: []Share{{"active Lock:transactionid", 40, 0.4}, {"active LWLock:WALWrite", 20, 0.2}, {"active", 40, 0.4}},
			Cores:   CPUUse{Wall: time.Second, Self: 1.0, DB: true, DBCores: 0.6, Of: 2}},
			0.5, "its balance split over a few rows"},
		{"postgres not measured: no claim", Profiled{Store: PostgreSQL, Phase: PhaseUnkeyed,
			DBWaits: []Share{{"active", 80, 0.8}},
			Cores:   CPUUse{Wall: time.Second, Self: 1.7, DB: true, DBCores: 0.5, DBUnmeasured: "server not local (db)", Of: 2}},
			0, ""},
		{"postgres not measured, the bench process alone saturating", Profiled{Store: PostgreSQL, Phase: PhaseUnkeyed,
			Cores: CPUUse{Wall: time.Second, Self: 1.9, DB: true, DBUnmeasured: "server not local (db)", Of: 2}},
			0, "used 1.90 cores (PostgreSQL's server processes not measured: server not local (db)), 1.90 of 2"},
		{"sqlite saturated", Profiled{Store: SQLite, Phase: PhaseUnkeyed,
			Block: []Share{{"github.com/mcpconform/mcpconform/reference/store/sqlite", 3, 0.75}},
			Cores: CPUUse{Wall: time.Second, Self: 1.86, Of: 2}},
			0, "the bench process (the load client and the gateway, SQLite in it) used 1.86 cores, 1.86 of 2 (90% or more counts as saturated). The phase was CPU-bound"},
	} {
		got := profileNote(tc.pr, tc.hot)
		if (tc.want == "") != (got == "") || !bytes.Contains([]byte(got), []byte(tc.want)) {
			t.Errorf("%s: profileNote = %q, want it to say %q", tc.name, got, tc.want)
		}
	}
}

// blockProfile is a block profile with one sample per stack (leaf first),
// each delay in seconds.
func blockProfile(stacks map[float64][]string) *profile.Profile {
	p := &profile.Profile{PeriodType: &profile.ValueType{Type: "contentions", Unit: "count"}, Period: 1,
		SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}}}
	fns := map[string]*profile.Function{}
	for delay, stack := range stacks {
		s := &profile.Sample{Value: []int64{1, int64(delay * 1e9)}}
		for _, name := range stack {
			fn := fns[name]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
				fns[name] = fn
				p.Function = append(p.Function, fn)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// TestBlockShares: a wait is put on the first package up the stack that is
// not a waiting primitive's, and the load client's waits and the MCP
// transport's wait for its handler are left out; Delta keeps only what
// happened between two snapshots.
func TestBlockShares(t *testing.T) {
	store := "github.com/mcpconform/mcpconform/reference/store/sqlite.(*Store).enqueue"
	before := blockProfile(map[float64][]string{1: {"runtime.selectgo", store}})
	after := blockProfile(map[float64][]string{
		4: {"runtime.selectgo", store},
		2: {"runtime.selectgo", "golang.org/x/sync/semaphore.(*Weighted).Acquire", "github.com/jackc/puddle/v2.(*Pool[...]).Acquire", "github.com/jackc/pgx/v5/pgxpool.(*Pool).Acquire"},
		7: {"runtime.selectgo", "net/http.(*persistConn).roundTrip", "net/http.(*Client).Do"},
		8: {"runtime.selectgo", "github.com/mcpconform/mcpconform/internal/bench.(*Request).Send"},
		9: {"runtime.chanrecv1", "github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).servePOST", "net/http.(*conn).serve"},
	})
	d, err := Delta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	shares, total := blockShares(d)
	want := []Share{{"github.com/mcpconform/mcpconform/reference/store/sqlite", 3, 0.6}, {"github.com/jackc/pgx/v5/pgxpool", 2, 0.4}}
	if total < 4.99 || total > 5.01 || len(shares) != len(want) {
		t.Fatalf("blockShares = %v, total %v; want %v, total 5", shares, total, want)
	}
	for i, w := range want {
		if g := shares[i]; g.Package != w.Package || g.Value < w.Value-0.01 || g.Value > w.Value+0.01 {
			t.Errorf("share %d = %+v, want %+v", i, g, w)
		}
	}
}
