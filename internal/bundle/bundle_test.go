package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

var at = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// The profile the example report was run with, and another product's.
const (
	profileFile      = "../../drivers/target/testdata/profile.example.json"
	otherProfileFile = "../../drivers/target/testdata/good-no-control.json"
)

// suite is the example reports' harness's suite.
var suite = &Suite{Version: "0.1.0", Commit: "0123456789abcdef", IDs: []string{"retry-01", "retry-02"},
	Scenarios: map[string]SuiteScenario{
		"retry-01": {Level: "must", Tags: []string{"@retry-01", "@must"}, Steps: []string{"Then the probe saw op1 dispatched 1 times"}},
		"retry-02": {Level: "must", Tags: []string{"@retry-02", "@must"}, Steps: []string{"Then the probe saw op2 dispatched 1 times"}},
	}}

// exampleRun is a small run of the example profile's gateway: retry-01
// checked op1's dispatch count (failing when it saw two), retry-02 passed;
// each with the history and one exchange to recheck and place them.
func exampleRun(dispatches int, start time.Time) reports.Run {
	urls := []string{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/mcp"}
	scenario := func(id, token string, dispatches int) reports.Scenario {
		var hist []judge.Op
		for i := range dispatches {
			v, _ := json.Marshal(judge.EffectValue{Token: token})
			hist = append(hist, judge.Op{Index: i, Process: "probe", Type: "ok", F: judge.FDispatch, Value: v, Time: start})
		}
		step := "the probe saw " + token + " dispatched 1 times"
		check := judge.Check{Step: step, State: judge.Held, Capability: judge.CapUpstream, Expected: "1 dispatch", Actual: "1 dispatch",
			Kind: judge.KindProbeCount, Args: judge.Args("token", token, "n", 1)}
		verdict := judge.Passed
		if dispatches != 1 {
			check.State, check.Actual = judge.Violated, "2 dispatches"
			verdict = judge.Failed
		}
		ex := reports.Exchange{Label: "call A", Lane: "A", Method: "POST", URL: urls[0], Status: 200,
			Started: start.Add(100 * time.Millisecond), Finished: start.Add(200 * time.Millisecond)}
		return reports.Scenario{ID: id, Title: "A retry dispatches once (" + id + ")", Level: "must", Tags: []string{"@" + id, "@must"}, Verdict: verdict,
			Steps:  []reports.StepResult{{Keyword: "Then ", Text: step, Status: "passed"}},
			Checks: []judge.Check{check}, History: hist, Exchanges: []reports.Exchange{ex}}
	}
	return reports.Run{Tool: "mcpconform", Version: "0.1.0", Commit: "0123456789abcdef", Level: reports.LevelWire,
		Target:  reports.Target{Kind: "url", URLs: urls, Profile: "Acme MCP gateway 4.2 (staging)", ServerName: "acme-gateway", ServerVersion: "2.3.1"},
		Started: start, Finished: start.Add(time.Second),
		Scenarios: []reports.Scenario{scenario("retry-01", "op1", dispatches), scenario("retry-02", "op2", 1)}}
}

// report writes exampleRun as a report directory.
func report(t *testing.T, dispatches int) string {
	t.Helper()
	return write(t, exampleRun(dispatches, at))
}

func write(t *testing.T, run reports.Run) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "report")
	if err := reports.Write(dir, run); err != nil {
		t.Fatal(err)
	}
	return dir
}

func keys(t *testing.T) (priv, pub []byte) {
	t.Helper()
	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func create(t *testing.T, dir string, privPEM []byte) []byte {
	t.Helper()
	opt := Options{Now: at}
	if privPEM != nil {
		k, err := ParsePrivateKey(privPEM)
		if err != nil {
			t.Fatal(err)
		}
		opt.Key = k
	}
	opt.Profile, opt.Suite = readFile(t, profileFile), suite
	var buf bytes.Buffer
	if _, err := Create(dir, &buf, opt); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func verify(t *testing.T, archive, pubPEM []byte) Verification {
	t.Helper()
	return verifyWith(t, archive, pubPEM, nil)
}

// verifyWith verifies as a reader who has the signer's key (pubPEM, when
// not nil), the profile the bundle must be for (when not nil) and the
// run's harness build.
func verifyWith(t *testing.T, archive, pubPEM, profile []byte) Verification {
	t.Helper()
	want := Expect{Profile: profile, Suite: suite}
	if pubPEM != nil {
		k, err := ParsePublicKey(pubPEM)
		if err != nil {
			t.Fatal(err)
		}
		want.Key = k
	}
	v, err := Verify(bytes.NewReader(archive), want)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	priv, pub := keys(t)
	dir := report(t, 1)
	archive := create(t, dir, priv)
	v := verify(t, archive, pub)
	if !v.OK() || !v.Signed || !v.Pinned || len(v.Notes) != 0 {
		t.Fatalf("verify = %+v, want a signed, pinned, clean bundle", v)
	}
	m := v.Manifest
	if m.Result != reports.RunPass || m.Level != reports.LevelWire || m.Target.ServerName != "acme-gateway" || m.Harness.Commit != "0123456789abcdef" || m.Total != 2 {
		t.Errorf("manifest = %+v", m)
	}
	if v.Rechecked.Checks != 2 || v.Rechecked.Result != reports.RunPass {
		t.Errorf("rechecked = %+v, want two dispatch checks recomputed and a PASS", v.Rechecked)
	}
	// Every file of the report is listed, and the profile is in, redacted.
	entries, _ := os.ReadDir(filepath.Join(dir, reports.EvidenceDir))
	if len(entries) != 2 || len(m.Files) != 9 { // the 2 evidence files, 2 histories and 5 report files
		t.Errorf("manifest lists %d files: %+v", len(m.Files), m.Files)
	}
	if !strings.Contains(string(m.Profile), "Acme MCP gateway") || strings.Contains(string(m.Profile), "mcpk_k1_example") ||
		strings.Contains(string(m.Profile), "ct_example") {
		t.Errorf("manifest profile is not the redacted profile: %s", m.Profile)
	}
	// The same report makes the same archive.
	if again := create(t, dir, priv); !bytes.Equal(again, archive) {
		t.Error("two bundles of one report differ")
	}
	// Unsigned bundles verify too, and say so.
	if v := verify(t, create(t, dir, nil), nil); !v.OK() || v.Signed {
		t.Errorf("unsigned verify = %+v", v)
	}
	// A failing run bundles and verifies: the bundle certifies the verdict, whatever it is.
	if v := verify(t, create(t, report(t, 2), priv), pub); !v.OK() || v.Manifest.Result != reports.RunFail {
		t.Errorf("failing run: verify = %+v", v)
	}
}

// rewrite reads an archive, lets edit change its entries, and writes it
// back; with rehash the manifest's hashes are recomputed, as a forger
// without the key would.
func rewrite(t *testing.T, archive []byte, rehash bool, edit func(map[string][]byte)) []byte {
	t.Helper()
	entries, problems, err := readArchive(bytes.NewReader(archive))
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	edit(entries)
	if rehash {
		var m Manifest
		if err := json.Unmarshal(entries[ManifestFile], &m); err != nil {
			t.Fatal(err)
		}
		// The forger lists exactly the files left, each with its new hash.
		m.Files = nil
		for name, b := range entries {
			if rel, ok := strings.CutPrefix(name, ReportDir+"/"); ok {
				m.Files = append(m.Files, File{Path: rel, Size: int64(len(b)), SHA256: hash(b)})
			}
		}
		sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
		mb, _ := json.MarshalIndent(m, "", "  ")
		entries[ManifestFile] = append(mb, '\n')
	}
	var names []string
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var es []entry
	for _, n := range names {
		es = append(es, entry{n, entries[n]})
	}
	var buf bytes.Buffer
	if err := writeArchive(&buf, es, at); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// replace edits a file's text, which must hold old.
func replace(t *testing.T, entries map[string][]byte, name, old, new string) {
	t.Helper()
	b, ok := entries[name]
	if !ok || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", name, old)
	}
	entries[name] = bytes.ReplaceAll(b, []byte(old), []byte(new))
}

func TestTamperedBundlesFail(t *testing.T) {
	priv, pub := keys(t)
	_, otherPub := keys(t)
	good := create(t, report(t, 1), priv)
	failing := create(t, report(t, 2), nil)
	for _, tc := range []struct {
		name    string
		archive []byte
		pub     []byte
		want    string
	}{
		{"tampered file", rewrite(t, good, false, func(e map[string][]byte) {
			replace(t, e, "report/evidence/retry-01.json", `"A retry dispatches once (retry-01)"`, `"A retry dispatches twice"`)
		}), pub, "evidence/retry-01.json does not match the manifest"},
		{"added file", rewrite(t, good, false, func(e map[string][]byte) {
			e["report/evidence/extra.json"] = []byte("{}")
		}), pub, "report/evidence/extra.json is in the archive but not in the manifest"},
		{"removed file", rewrite(t, good, false, func(e map[string][]byte) {
			delete(e, "report/history/retry-01.ndjson")
		}), pub, "history/retry-01.ndjson is listed in the manifest but missing"},
		{"tampered signature", rewrite(t, good, false, func(e map[string][]byte) {
			var s Signature
			json.Unmarshal(e[SignatureFile], &s)
			// Flip a bit of the signature itself, not of its base64 text,
			// which could turn a character into one base64 does not have.
			sig, err := base64.StdEncoding.DecodeString(s.Signature)
			if err != nil {
				t.Fatal(err)
			}
			sig[5] ^= 1
			s.Signature = base64.StdEncoding.EncodeToString(sig)
			e[SignatureFile], _ = json.Marshal(s)
		}), pub, "the signature does not verify"},
		{"manifest edited after signing", rewrite(t, good, false, func(e map[string][]byte) {
			replace(t, e, ManifestFile, `"server_version": "2.3.1"`, `"server_version": "2.4.0"`)
		}), pub, "the signature does not verify"},
		{"signed by another key", good, otherPub, "not by the given key"},
		{"signature removed", rewrite(t, good, false, func(e map[string][]byte) { delete(e, SignatureFile) }), pub, "not signed"},
		{"edited verdict, hashes recomputed", rewrite(t, failing, true, func(e map[string][]byte) {
			replace(t, e, "report/evidence/retry-01.json", `"verdict": "failed"`, `"verdict": "passed"`)
			replace(t, e, "report/evidence/retry-01.json", `"state": "violated"`, `"state": "held"`)
			replace(t, e, "report/summary.json", `"verdict": "failed"`, `"verdict": "passed"`)
			replace(t, e, "report/summary.json", `"result": "FAIL"`, `"result": "PASS"`)
			replace(t, e, ManifestFile, `"result": "FAIL"`, `"result": "PASS"`)
		}), nil, "history contradicts the recorded check: retry-01 (passed): the probe saw op1 dispatched 1 times"},
		{"edited manifest verdict only", rewrite(t, failing, false, func(e map[string][]byte) {
			replace(t, e, ManifestFile, `"result": "FAIL"`, `"result": "PASS"`)
		}), nil, "the scenarios give FAIL, the manifest says PASS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verify(t, tc.archive, tc.pub)
			if v.OK() {
				t.Fatalf("verify passed a tampered bundle: %+v", v)
			}
			if !strings.Contains(strings.Join(v.Problems, "\n"), tc.want) {
				t.Errorf("problems:\n%s\nwant one saying %q", strings.Join(v.Problems, "\n"), tc.want)
			}
		})
	}
}

func TestHostileArchives(t *testing.T) {
	if _, err := Verify(strings.NewReader("not a bundle"), Expect{}); err == nil {
		t.Error("Verify accepted a stream that is no gzip")
	}
	manifest := []byte(`{"format":"` + Format + `","files":[{"path":"../manifest.sig","size":1,"sha256":"00"}]}`)
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"a path out of the archive", []entry{{"../escape", []byte("x")}, {ManifestFile, manifest}}, `"../escape" is not a clean relative path`},
		{"names that differ only in case", []entry{{ManifestFile, manifest}, {"report/summary.json", []byte("{}")}, {"report/Summary.json", []byte("{}")}},
			`entries "report/summary.json" and "report/Summary.json" differ only in case`},
		{"a manifest path out of the report", []entry{{ManifestFile, manifest}}, `the manifest lists "../manifest.sig", not a clean path inside the report`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeArchive(&buf, tc.entries, at)
			v, err := Verify(&buf, Expect{})
			if err != nil {
				t.Fatal(err)
			}
			if v.OK() || !strings.Contains(strings.Join(v.Problems, "\n"), tc.want) {
				t.Errorf("problems = %q, want %q", v.Problems, tc.want)
			}
		})
	}
}

func TestCreateRefusesAContradictedReport(t *testing.T) {
	dir := report(t, 1)
	// The history now shows two dispatches where the check recorded one.
	hp := filepath.Join(dir, reports.HistoryDir, "retry-01.ndjson")
	ep := filepath.Join(dir, reports.EvidenceDir, "retry-01.json")
	run, err := reports.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := run.Scenarios[0]
	s.History = append(s.History, s.History[0])
	s.History[1].Index = 1
	eb, _ := json.MarshalIndent(s, "", "  ")
	os.WriteFile(ep, eb, 0o644)
	var hb bytes.Buffer
	for _, op := range s.History {
		b, _ := json.Marshal(op)
		hb.Write(append(b, '\n'))
	}
	os.WriteFile(hp, hb.Bytes(), 0o644)
	var out bytes.Buffer
	if _, err := Create(dir, &out, Options{Now: at}); err == nil || !strings.Contains(err.Error(), "contradicted by their history") {
		t.Errorf("Create = %v, want a refusal", err)
	}
}

func TestKeys(t *testing.T) {
	priv, pub := keys(t)
	k, err := ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Equal(k.Public()) || !strings.HasPrefix(Fingerprint(p), "SHA256:") {
		t.Error("the public key is not the private key's")
	}
	if _, err := ParsePrivateKey(pub); err == nil {
		t.Error("a public key parsed as a private one")
	}
	if _, err := ParsePublicKey([]byte("junk")); err == nil {
		t.Error("junk parsed as a public key")
	}
}

// forge bundles a doctored report directory as a forger would with a build
// of Create that checks nothing: the manifest says what summary.json says,
// the hashes are right, and it is signed with key when one is given.
func forge(t *testing.T, dir string, key []byte, profile []byte) []byte {
	t.Helper()
	sum, err := reports.LoadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := Manifest{Format: Format, Created: at, Harness: Harness{Tool: sum.Tool, Version: sum.Version, Commit: sum.Commit},
		Target: sum.Target, Level: sum.Level, Result: sum.Result, Why: sum.Why, Total: sum.Total, Counts: sum.Counts,
		Started: sum.Started, Finished: sum.Finished}
	if profile != nil {
		if m.Profile, err = redactedProfile(profile); err != nil {
			t.Fatal(err)
		}
	}
	files, contents, err := readDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Files = files
	mb, _ := json.MarshalIndent(m, "", "  ")
	mb = append(mb, '\n')
	entries := []entry{{ManifestFile, mb}}
	if key != nil {
		k, err := ParsePrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := sign(mb, k)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{SignatureFile, sb})
	}
	for _, f := range files {
		entries = append(entries, entry{ReportDir + "/" + f.Path, contents[f.Path]})
	}
	var buf bytes.Buffer
	if err := writeArchive(&buf, entries, at); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Every way a vendor might doctor a bundle of a failing run into a pass, or
// pass a bundle off as another's, and what verify says. "before" records
// whether verify accepted the attack before the coherence checks (before a review
// added them); every row is refused now.
func TestVendorAttacks(t *testing.T) {
	priv, pub := keys(t)
	forgerPriv, _ := keys(t)
	profile, other := readFile(t, profileFile), readFile(t, otherProfileFile)
	failing := create(t, report(t, 2), nil)
	good := create(t, report(t, 1), priv)

	dropped := exampleRun(2, at)
	dropped.Scenarios = dropped.Scenarios[1:]
	selected := exampleRun(2, at)
	selected.Scenarios, selected.Tags = selected.Scenarios[1:], "not @retry-01"
	swapped := exampleRun(2, at)
	swapped.Scenarios[0] = exampleRun(1, at.Add(-24*time.Hour)).Scenarios[0]
	elsewhere := exampleRun(2, at)
	elsewhere.Scenarios[0] = exampleRun(1, at).Scenarios[0]
	elsewhere.Scenarios[0].Exchanges[0].URL = "http://127.0.0.1:9090/mcp"
	// The expectation edited to what the gateway did: the check holds and
	// recomputes from the untouched history.
	relaxed := exampleRun(2, at)
	r := &relaxed.Scenarios[0]
	r.Verdict, r.Steps[0].Text = judge.Passed, "the probe saw op1 dispatched at most 2 times"
	r.Checks[0] = judge.Check{Step: r.Steps[0].Text, State: judge.Held, Capability: judge.CapUpstream, Expected: "at most 2", Actual: "2 dispatches"}
	demoted := exampleRun(2, at)
	demoted.Scenarios[0].Level, demoted.Scenarios[0].Tags[1] = "should", "@should"
	demoted.Scenarios[0].Verdict, demoted.Scenarios[0].Checks = judge.Skipped, nil
	rewritten := exampleRun(1, at)
	rewritten.Scenarios[0].History = append(rewritten.Scenarios[0].History, rewritten.Scenarios[0].History[0])
	rewritten.Scenarios[0].History[1].Index = 1

	for _, tc := range []struct {
		name, before string
		archive      []byte
		pub, profile []byte // what the reader checks it with
		want         string
	}{
		{"failed scenario's evidence and manifest line dropped", "refused", rewrite(t, failing, true, func(e map[string][]byte) {
			delete(e, "report/evidence/retry-01.json")
		}), nil, nil, "the report does not load"},
		{"failed scenario dropped from every file, report consistent", "accepted", forge(t, write(t, dropped), nil, profile), nil, nil,
			"1 scenarios of the suite (mcpconform 0.1.0 commit 0123456789ab) are not in the report: retry-01"},
		{"a run of the scenarios that pass (--tags)", "accepted", forge(t, write(t, selected), nil, profile), nil, nil,
			`the run selected scenarios (--tags/--id "not @retry-01")`},
		{"failed scenario's evidence swapped for a passing run's", "accepted", forge(t, write(t, swapped), nil, profile), nil, nil,
			`retry-01: exchange "call A" at 2026-12-02T12:00:00.1Z is outside the run`},
		{"evidence from another gateway", "accepted", forge(t, write(t, elsewhere), nil, profile), nil, nil,
			`retry-01: exchange "call A" went to http://127.0.0.1:9090/mcp, which the run did not test`},
		{"the failed step's expectation relaxed to what happened", "accepted", forge(t, write(t, relaxed), nil, profile), nil, nil,
			`retry-01 is not the suite's scenario: step 1 is "Then the probe saw op1 dispatched at most 2 times", the suite's is "Then the probe saw op1 dispatched 1 times"`},
		{"the failed scenario demoted to @should and skipped", "accepted", forge(t, write(t, demoted), nil, profile), nil, nil,
			`retry-01 is not the suite's scenario: level "should", the suite's is "must"`},
		{"history shows a second dispatch, verdict kept", "refused", forge(t, write(t, rewritten), nil, profile), nil, nil,
			"history contradicts the recorded check: retry-01 (passed)"},
		{"file added, not in the manifest", "refused", rewrite(t, good, false, func(e map[string][]byte) {
			e["report/evidence/retry-03.json"] = []byte("{}")
		}), pub, nil, "report/evidence/retry-03.json is in the archive but not in the manifest"},
		{"forged report signed with the forger's key", "refused", forge(t, write(t, dropped), forgerPriv, profile), pub, nil,
			"not by the given key"},
		{"old signed bundle shown for another product's profile", "accepted", good, pub, other,
			`the bundle was made for profile "Acme MCP gateway 4.2 (staging)"`},
		{"manifest's profile swapped for another product's (unsigned)", "accepted", rewrite(t, create(t, report(t, 1), nil), false, func(e map[string][]byte) {
			var m map[string]json.RawMessage
			json.Unmarshal(e[ManifestFile], &m)
			m["profile"], _ = redactedProfile(other)
			e[ManifestFile], _ = json.MarshalIndent(m, "", "  ")
		}), nil, nil, "the manifest's profile names http://127.0.0.1:9000/, which the run did not test"},
		{"manifest's reasons rewritten (unsigned)", "accepted", rewrite(t, failing, false, func(e map[string][]byte) {
			replace(t, e, ManifestFile, `"retry-01 [must]: failed`, `"retry-01 [must]: flaky network, retried`)
		}), nil, nil, "the manifest gives other reasons for its verdict than the scenarios do"},
		{"manifest's run times moved (unsigned)", "accepted", rewrite(t, create(t, report(t, 1), nil), false, func(e map[string][]byte) {
			replace(t, e, ManifestFile, `"started": "2026-12-03T12:00:00Z"`, `"started": "2027-01-03T12:00:00Z"`)
		}), nil, nil, "the manifest says the run was 2027-01-03"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verifyWith(t, tc.archive, tc.pub, tc.profile)
			if v.OK() {
				t.Fatalf("verify accepted it (before the fix: %s): %+v", tc.before, v)
			}
			if !strings.Contains(strings.Join(v.Problems, "\n"), tc.want) {
				t.Errorf("problems:\n%s\nwant one saying %q", strings.Join(v.Problems, "\n"), tc.want)
			}
		})
	}
}

// What verify cannot prove, and says so: a forgery made consistently in
// every file passes an unsigned bundle, or one signed by the forger's own
// key when the reader gives no key; the notes say the result is integrity
// only. A pinned key or the run's harness build is what a reader needs.
func TestWhatVerifyCannotProve(t *testing.T) {
	forgerPriv, _ := keys(t)
	forged := exampleRun(2, at)
	s := &forged.Scenarios[0]
	s.History, s.Verdict = s.History[:1], judge.Passed
	s.Checks[0].State, s.Checks[0].Actual = judge.Held, "1 dispatch"
	dir := write(t, forged)
	for _, tc := range []struct {
		name string
		key  []byte
		note string
	}{
		{"unsigned", nil, "unsigned: this proves the files agree with each other, not who made them"},
		{"signed by the forger", forgerPriv, "signed by a key that was not given to check it with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verify(t, forge(t, dir, tc.key, readFile(t, profileFile)), nil)
			if !v.OK() || !strings.Contains(strings.Join(v.Notes, "\n"), tc.note) {
				t.Errorf("verify = problems %q notes %q; want it to pass with the note %q", v.Problems, v.Notes, tc.note)
			}
		})
	}
	// Another harness build cannot tell which scenarios are missing, and says so.
	other := &Suite{Version: "0.2.0", Commit: "fedcba9876543210", IDs: []string{"retry-01"}}
	v, err := Verify(bytes.NewReader(forge(t, dir, nil, nil)), Expect{Suite: other})
	if err != nil || !v.OK() || !strings.Contains(strings.Join(v.Notes, "\n"), "the scenario set was not checked") {
		t.Errorf("verify with another build = %v, problems %q, notes %q", err, v.Problems, v.Notes)
	}
}

// A PASS that rests on waivers says so: they are accepted gaps, not passes.
func TestWaiversAreNamed(t *testing.T) {
	run := exampleRun(2, at)
	run.Scenarios[0].Verdict, run.Scenarios[0].Reason = judge.ExpectedFailure, "known: replays are not idempotent yet"
	v := verify(t, forge(t, write(t, run), nil, readFile(t, profileFile)), nil)
	if !v.OK() || v.Manifest.Result != reports.RunPass {
		t.Fatalf("verify = %+v", v)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "1 scenarios are waived as expected failures, not passed (retry-01;") {
		t.Errorf("notes %q do not name the waiver", v.Notes)
	}
}

// Create refuses what verify would fail, so an honest bundler never signs it.
func TestCreateRefusesIncoherentReports(t *testing.T) {
	dropped := exampleRun(1, at)
	dropped.Scenarios = dropped.Scenarios[1:]
	selected := exampleRun(1, at)
	selected.Tags = "@must"
	swapped := exampleRun(1, at)
	swapped.Scenarios[0] = exampleRun(1, at.Add(time.Hour)).Scenarios[0]
	for _, tc := range []struct {
		name    string
		dir     string
		profile string
		want    string
	}{
		{"another product's profile", report(t, 1), otherProfileFile, "the manifest's profile names http://127.0.0.1:9000/, which the run did not test"},
		{"a scenario of the suite missing", write(t, dropped), profileFile, "are not in the report: retry-01"},
		{"a selection", write(t, selected), profileFile, `the run selected scenarios (--tags/--id "@must")`},
		{"evidence of another run", write(t, swapped), profileFile, "is outside the run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Create(tc.dir, &out, Options{Now: at, Profile: readFile(t, tc.profile), Suite: suite})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Create = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}
