package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reports"
)

var at = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// report writes a small report whose one scenario checked op1's dispatch
// count, with the history to recheck it against.
func report(t *testing.T, dispatches int) string {
	t.Helper()
	var hist []reports.Op
	for i := range dispatches {
		v, _ := json.Marshal(reports.EffectValue{Token: "op1"})
		hist = append(hist, reports.Op{Index: i, Process: "probe", Type: "ok", F: reports.FDispatch, Value: v, Time: at})
	}
	step := "the probe saw op1 dispatched 1 times"
	check := reports.Check{Step: step, State: reports.Held, OK: true, Capability: reports.CapUpstream, Expected: "1 dispatch", Actual: "1 dispatch"}
	verdict := reports.Passed
	if dispatches != 1 {
		check.State, check.OK, check.Actual = reports.Violated, false, "2 dispatches"
		verdict = reports.Failed
	}
	run := reports.Run{Tool: "mcpconform", Version: "0.1.0", Commit: "0123456789abcdef", Level: reports.LevelWire,
		Target:  reports.Target{Kind: "url", URLs: []string{"https://gw.example/mcp"}, Profile: "Acme", ServerName: "acme-gateway", ServerVersion: "2.3.1"},
		Started: at, Finished: at.Add(time.Second),
		Scenarios: []reports.Scenario{{ID: "retry-01", Title: "A retry dispatches once", Level: "must", Verdict: verdict,
			Checks: []reports.Check{check}, History: hist}}}
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
	profile, err := os.ReadFile("../drivers/target/testdata/profile.example.json")
	if err != nil {
		t.Fatal(err)
	}
	opt.Profile = profile
	var buf bytes.Buffer
	if _, err := Create(dir, &buf, opt); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func verify(t *testing.T, archive, pubPEM []byte) Verification {
	t.Helper()
	var pub []byte
	if pubPEM != nil {
		k, err := ParsePublicKey(pubPEM)
		if err != nil {
			t.Fatal(err)
		}
		pub = k
	}
	v, err := Verify(bytes.NewReader(archive), pub)
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
	if !v.OK() || !v.Signed || !v.Pinned {
		t.Fatalf("verify = %+v, want a signed, pinned, clean bundle", v)
	}
	m := v.Manifest
	if m.Result != reports.RunPass || m.Level != reports.LevelWire || m.Target.ServerName != "acme-gateway" || m.Harness.Commit != "0123456789abcdef" || m.Total != 1 {
		t.Errorf("manifest = %+v", m)
	}
	if v.Rechecked.Checks != 1 || v.Rechecked.Result != reports.RunPass {
		t.Errorf("rechecked = %+v, want one dispatch check recomputed and a PASS", v.Rechecked)
	}
	// Every file of the report is listed, and the profile is in, redacted.
	entries, _ := os.ReadDir(filepath.Join(dir, reports.EvidenceDir))
	if len(entries) != 1 || len(m.Files) != 6 {
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
		for i, f := range m.Files {
			b := entries[path.Join(ReportDir, f.Path)]
			m.Files[i].Size, m.Files[i].SHA256 = int64(len(b)), hash(b)
		}
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
			replace(t, e, "report/evidence/retry-01.json", `"A retry dispatches once"`, `"A retry dispatches twice"`)
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
			replace(t, e, "report/evidence/retry-01.json", `"ok": false`, `"ok": true`)
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
	if _, err := Verify(strings.NewReader("not a bundle"), nil); err == nil {
		t.Error("Verify accepted a stream that is no gzip")
	}
	var buf bytes.Buffer
	writeArchive(&buf, []entry{{"../escape", []byte("x")}, {ManifestFile, []byte(`{"format":"` + Format + `"}`)}}, at)
	v, err := Verify(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() || !strings.Contains(strings.Join(v.Problems, "\n"), `"../escape" is not a clean relative path`) {
		t.Errorf("problems = %q", v.Problems)
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
