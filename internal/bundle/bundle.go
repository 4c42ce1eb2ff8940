// Package bundle makes and checks certification bundles: a report
// directory packed as a tar.gz with a manifest that names what was tested
// (the target's serverInfo, the profile with its secrets redacted, the
// harness), the verdict, and the SHA-256 of every file, optionally signed
// with ed25519. Verify trusts none of it: it checks the hashes and the
// signature and recomputes every verdict from the histories.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpconform/mcpconform/internal/buildinfo"
	"github.com/mcpconform/mcpconform/internal/judge"
	"github.com/mcpconform/mcpconform/reports"
)

// Names inside a bundle.
const (
	ManifestFile  = "manifest.json"
	SignatureFile = "manifest.sig" // a Signature, over the bytes of manifest.json
	ReportDir     = "report"       // the report directory's files, under report/
	Format        = "mcpconform.bundle/v1"
)

// maxEntry bounds one file read from an archive, and maxTotal all of them,
// so a hostile bundle cannot exhaust memory.
const (
	maxEntry = 256 << 20
	maxTotal = 1 << 30
)

// Manifest is manifest.json.
type Manifest struct {
	Format  string    `json:"format"` // Format
	Created time.Time `json:"created"`
	// Harness is the harness that ran the scenarios (from summary.json);
	// Bundler the one that made the bundle.
	Harness Harness        `json:"harness"`
	Bundler buildinfo.Info `json:"bundler"`
	// Target is what was tested: kind, URLs, serverInfo name and version,
	// the profile's name, capabilities.
	Target reports.Target `json:"target"`
	// Profile is the profile the run used, credentials redacted; absent
	// when none was given (the reference target has none).
	Profile  json.RawMessage `json:"profile,omitempty"`
	Level    string          `json:"level"`
	Result   string          `json:"result"` // PASS, FAIL, INCOMPLETE, INTERRUPTED
	Why      []string        `json:"why"`
	Total    int             `json:"total"`
	Counts   map[string]int  `json:"counts"`
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished"`
	// Files lists every file of the report, sorted by path, relative to
	// the report directory (under report/ in the archive).
	Files []File `json:"files"`
}

// Harness names the harness that ran the scenarios.
type Harness struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
}

// File is one file of the report.
type File struct {
	Path   string `json:"path"` // slash-separated, relative to the report directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// Signature is manifest.sig.
type Signature struct {
	Algorithm string `json:"algorithm"`  // "ed25519"
	PublicKey string `json:"public_key"` // base64 of the raw 32-byte key
	Signature string `json:"signature"`  // base64, over manifest.json as stored
}

// Options of Create.
type Options struct {
	// Profile is the profile file the run used; it goes into the manifest
	// with every credential redacted.
	Profile []byte
	// Key signs the manifest when set.
	Key ed25519.PrivateKey
	// Now is the creation time (time.Now when zero).
	Now time.Time
	// Suite, when it is the run's harness's, must be the report's scenario
	// set exactly, each with the suite's level, tags and steps
	// (CurrentSuite); nil skips that check.
	Suite *Suite
}

// Create packs the report directory dir into w. It refuses a directory
// whose files contradict each other (reports.Load), whose summary.json
// claims another verdict than its scenarios give, or whose histories
// contradict its checks: a bundle certifies only what recomputes. It also
// refuses a profile that is not the one the run used, a run of a selection
// of the suite, and exchanges the run could not have made (coherence).
func Create(dir string, w io.Writer, opt Options) (Manifest, error) {
	run, err := reports.Load(dir)
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle: %w", err)
	}
	sum, err := reports.LoadSummary(dir)
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle: %w", err)
	}
	re := reports.RecheckRun(run)
	if re.Scenarios > 0 {
		return Manifest{}, fmt.Errorf("bundle: %d scenarios of %s are contradicted by their history (see mcpconform recheck)", re.Scenarios, dir)
	}
	if re.Result != sum.Result {
		return Manifest{}, fmt.Errorf("bundle: %s says %s, its scenarios give %s (see mcpconform recheck)", reports.SummaryFile, sum.Result, re.Result)
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	m := Manifest{
		Format:  Format,
		Created: now.UTC().Truncate(time.Second),
		Harness: Harness{Tool: sum.Tool, Version: sum.Version, Commit: sum.Commit},
		Bundler: buildinfo.Read(),
		Target:  sum.Target,
		Level:   reports.ClaimedLevel(run),
		Result:  re.Result, Why: re.Why, Total: sum.Total, Counts: sum.Counts,
		Started: sum.Started, Finished: sum.Finished,
	}
	if m.Why == nil {
		m.Why = []string{}
	}
	if opt.Profile != nil {
		if m.Profile, err = redactedProfile(opt.Profile); err != nil {
			return Manifest{}, fmt.Errorf("bundle: profile: %w", err)
		}
	}
	if problems, _ := coherence(sum, run, m.Profile, opt.Suite); len(problems) > 0 {
		return Manifest{}, fmt.Errorf("bundle: %s does not hold together:\n  %s", dir, strings.Join(problems, "\n  "))
	}
	files, contents, err := readDir(dir)
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle: %w", err)
	}
	m.Files = files
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle: manifest: %w", err)
	}
	mb = append(mb, '\n')
	entries := []entry{{ManifestFile, mb}}
	if opt.Key != nil {
		sb, err := sign(mb, opt.Key)
		if err != nil {
			return Manifest{}, err
		}
		entries = append(entries, entry{SignatureFile, sb})
	}
	for _, f := range files {
		entries = append(entries, entry{path.Join(ReportDir, f.Path), contents[f.Path]})
	}
	if err := writeArchive(w, entries, m.Created); err != nil {
		return Manifest{}, fmt.Errorf("bundle: %w", err)
	}
	return m, nil
}

func sign(manifest []byte, key ed25519.PrivateKey) ([]byte, error) {
	s := Signature{
		Algorithm: "ed25519",
		PublicKey: base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, manifest)),
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bundle: signature: %w", err)
	}
	return append(b, '\n'), nil
}

// readDir hashes every regular file under dir; anything else (a symbolic
// link, a device) is refused, since the archive could not carry it as is.
func readDir(dir string) ([]File, map[string][]byte, error) {
	var files []File
	contents := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		slash := filepath.ToSlash(rel)
		files = append(files, File{Path: slash, Size: int64(len(b)), SHA256: hash(b)})
		contents[slash] = b
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, contents, err
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type entry struct {
	name string
	data []byte
}

// writeArchive writes a gzipped tar of regular files, all with the same
// time and mode, so the same report makes the same archive.
func writeArchive(w io.Writer, entries []entry, at time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: at, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// readArchive reads every entry of a bundle. Entries that are not regular
// files, have paths that leave the archive, repeat a name or are too large
// are problems, not errors: verification reports them with the rest. The
// error is for a stream that is no gzipped tar at all.
func readArchive(r io.Reader) (map[string][]byte, []string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("not a gzip archive: %w", err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	folded := map[string]string{} // lower case -> name, for case-insensitive file systems
	var problems []string
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read archive: %w", err)
		}
		name := hdr.Name
		switch {
		case hdr.Typeflag != tar.TypeReg:
			problems = append(problems, fmt.Sprintf("entry %q is not a regular file", name))
			continue
		case !filepath.IsLocal(filepath.FromSlash(name)) || path.Clean(name) != name:
			problems = append(problems, fmt.Sprintf("entry %q is not a clean relative path", name))
			continue
		case hdr.Size > maxEntry:
			problems = append(problems, fmt.Sprintf("entry %q is %d bytes, more than a report file can be", name, hdr.Size))
			continue
		}
		if _, dup := out[name]; dup {
			problems = append(problems, fmt.Sprintf("entry %q appears twice", name))
			continue
		}
		// Unpacked where names fold case (macOS, Windows), one would
		// overwrite the other and be judged in its place.
		if other, ok := folded[strings.ToLower(name)]; ok {
			problems = append(problems, fmt.Sprintf("entries %q and %q differ only in case", other, name))
			continue
		}
		folded[strings.ToLower(name)] = name
		if total += hdr.Size; total > maxTotal {
			return nil, nil, fmt.Errorf("read archive: more than %d bytes of files, more than a report can be", maxTotal)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxEntry))
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
		out[name] = b
	}
	return out, problems, nil
}

// Verification is what Verify found.
type Verification struct {
	Manifest Manifest
	// Signed: the bundle has a signature and it verifies; KeyFingerprint
	// names the key; Pinned: it is the key the verifier was given.
	Signed         bool
	KeyFingerprint string
	Pinned         bool
	// Rechecked is the verdict recomputed from the report's files.
	Rechecked reports.Rechecked
	// Problems lists every mismatch; the bundle is good when there is none.
	Problems []string
	// Notes say what the verification does not prove: who made an
	// unsigned bundle or one signed by a key not given, a scenario set not
	// held to a suite.
	Notes []string
}

// Expect is what the verifier knows without the bundle's word.
type Expect struct {
	// Key is the signer's public key: the bundle must be signed by it.
	Key ed25519.PublicKey
	// Profile is the profile file the bundle must have been made for (the
	// reader's own copy; compared with every credential redacted), so an
	// old bundle is not passed off as another product's.
	Profile []byte
	// Suite is the verifier's suite (CurrentSuite); when it is the run's
	// harness's, the report must hold exactly its scenarios, as written.
	Suite *Suite
}

// OK reports whether nothing was found wrong.
func (v Verification) OK() bool { return len(v.Problems) == 0 }

// Verify checks a bundle: every file against the manifest's size and
// SHA-256 (and no file the manifest does not list), the signature over the
// manifest (required, and by want.Key, when given), the profile (want's,
// when given), and the verdict: the report is unpacked and reloaded, every
// check recheck knows is recomputed from its history and the run verdict
// is judged afresh, and both must agree with summary.json and the
// manifest; the report's parts must be coherent (see Create). The error is
// for a bundle that cannot be read at all; everything else is in Problems.
//
// Without a signature by a key the reader trusts, a bundle proves only
// that its files agree with each other: whoever can edit one can
// recompute the hashes and, consistently, the whole report.
func Verify(r io.Reader, want Expect) (Verification, error) {
	pub := want.Key
	var v Verification
	bad := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	entries, problems, err := readArchive(r)
	if err != nil {
		return v, fmt.Errorf("bundle: %w", err)
	}
	v.Problems = problems
	mb, ok := entries[ManifestFile]
	if !ok {
		return v, fmt.Errorf("bundle: no %s in the archive", ManifestFile)
	}
	if err := json.Unmarshal(mb, &v.Manifest); err != nil {
		return v, fmt.Errorf("bundle: %s: %w", ManifestFile, err)
	}
	m := v.Manifest
	if m.Format != Format {
		return v, fmt.Errorf("bundle: %s: format %q, want %q", ManifestFile, m.Format, Format)
	}
	v.checkSignature(mb, entries[SignatureFile], pub, bad)
	switch {
	case !v.Signed:
		v.Notes = append(v.Notes, "unsigned: this proves the files agree with each other, not who made them; anyone can recompute the hashes")
	case !v.Pinned:
		v.Notes = append(v.Notes, "signed by a key that was not given to check it with: anyone can sign; pass the signer's public key")
	}
	if want.Profile != nil {
		exp, err := redactedProfile(want.Profile)
		switch {
		case err != nil:
			return v, fmt.Errorf("bundle: the expected profile: %w", err)
		case m.Profile == nil:
			bad("the bundle names no profile, the given one is %s", profileName(exp))
		case !sameJSON(exp, m.Profile):
			bad("the bundle was made for profile %s, not for the given %s (an old or another product's bundle?)", profileName(m.Profile), profileName(exp))
		}
	}

	listed := map[string]bool{}
	report := map[string][]byte{}
	for _, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || path.Clean(f.Path) != f.Path || strings.Contains(f.Path, `\`) {
			bad("the manifest lists %q, not a clean path inside the report", f.Path)
			continue
		}
		name := path.Join(ReportDir, f.Path)
		listed[name] = true
		b, ok := entries[name]
		switch {
		case !ok:
			bad("%s is listed in the manifest but missing", f.Path)
		case int64(len(b)) != f.Size || hash(b) != f.SHA256:
			bad("%s does not match the manifest: sha256 %s (%d bytes), manifest says %s (%d bytes)", f.Path, hash(b), len(b), f.SHA256, f.Size)
		default:
			report[f.Path] = b
		}
	}
	for name := range entries {
		if name != ManifestFile && name != SignatureFile && !listed[name] {
			bad("%s is in the archive but not in the manifest", name)
		}
	}
	if len(v.Problems) > 0 {
		sort.Strings(v.Problems)
		return v, nil // recomputing a verdict from altered files proves nothing
	}
	v.recompute(report, want.Suite, bad)
	sort.Strings(v.Problems)
	return v, nil
}

func profileName(p json.RawMessage) string {
	var x struct {
		Name string   `json:"name"`
		URLs []string `json:"urls"`
	}
	json.Unmarshal(p, &x)
	return fmt.Sprintf("%q (%s)", x.Name, strings.Join(x.URLs, ", "))
}

// sameJSON compares two JSON values whatever their spacing or key order.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func (v *Verification) checkSignature(manifest, sigFile []byte, pub ed25519.PublicKey, bad func(string, ...any)) {
	if sigFile == nil {
		if pub != nil {
			bad("the bundle is not signed, but a public key was given to check it with")
		}
		return
	}
	var s Signature
	if err := json.Unmarshal(sigFile, &s); err != nil {
		bad("%s: %v", SignatureFile, err)
		return
	}
	key, kerr := base64.StdEncoding.DecodeString(s.PublicKey)
	sig, serr := base64.StdEncoding.DecodeString(s.Signature)
	if s.Algorithm != "ed25519" || kerr != nil || serr != nil || len(key) != ed25519.PublicKeySize {
		bad("%s is not an ed25519 signature with its public key", SignatureFile)
		return
	}
	signer := ed25519.PublicKey(key)
	v.KeyFingerprint = Fingerprint(signer)
	if pub != nil && !pub.Equal(signer) {
		bad("signed by %s, not by the given key %s", v.KeyFingerprint, Fingerprint(pub))
		return
	}
	if !ed25519.Verify(signer, manifest, sig) {
		bad("the signature does not verify: %s was changed after signing, or the signature was", ManifestFile)
		return
	}
	v.Signed, v.Pinned = true, pub != nil
}

// recompute unpacks the report and judges it again.
func (v *Verification) recompute(files map[string][]byte, suite *Suite, bad func(string, ...any)) {
	dir, err := os.MkdirTemp("", "mcpconform-verify-")
	if err != nil {
		bad("unpack the report: %v", err)
		return
	}
	defer os.RemoveAll(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		bad("unpack the report: %v", err)
		return
	}
	defer root.Close()
	for name, b := range files {
		p := filepath.FromSlash(name)
		if err := root.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			bad("unpack %s: %v", name, err)
			return
		}
		if err := root.WriteFile(p, b, 0o644); err != nil {
			bad("unpack %s: %v", name, err)
			return
		}
	}
	run, err := reports.Load(dir)
	if err != nil {
		bad("the report does not load: %v", err)
		return
	}
	sum, err := reports.LoadSummary(dir)
	if err != nil {
		bad("the report does not load: %v", err)
		return
	}
	re := reports.RecheckRun(run)
	v.Rechecked = re
	m := v.Manifest
	for _, line := range re.Contradicted {
		bad("history contradicts the recorded check: %s", line)
	}
	if re.Result != m.Result {
		bad("the scenarios give %s, the manifest says %s", re.Result, m.Result)
	}
	if sum.Result != m.Result || sum.OK != (m.Result == reports.RunPass) {
		bad("%s says %s (ok=%v), the manifest says %s", reports.SummaryFile, sum.Result, sum.OK, m.Result)
	}
	if got := reports.ClaimedLevel(run); got != m.Level {
		bad("the report claims level %s, the manifest says %s", got, m.Level)
	}
	if sum.Total != m.Total || !sameCounts(sum.Counts, m.Counts) {
		bad("%s counts %v of %d scenarios, the manifest says %v of %d", reports.SummaryFile, sum.Counts, sum.Total, m.Counts, m.Total)
	}
	want, _ := json.Marshal(sum.Target)
	got, _ := json.Marshal(m.Target)
	if !bytes.Equal(want, got) {
		bad("the manifest's target %s differs from the report's %s", got, want)
	}
	if sum.Version != m.Harness.Version || sum.Commit != m.Harness.Commit {
		bad("the manifest names harness %s %s, the report %s %s", m.Harness.Version, m.Harness.Commit, sum.Version, sum.Commit)
	}
	if !sum.Started.Equal(m.Started) || !sum.Finished.Equal(m.Finished) {
		bad("the manifest says the run was %s to %s, the report %s to %s", m.Started, m.Finished, sum.Started, sum.Finished)
	}
	var waived []string
	for _, s := range run.Scenarios {
		if s.Verdict == judge.ExpectedFailure {
			waived = append(waived, s.ID)
		}
	}
	if len(waived) > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d scenarios are waived as expected failures, not passed (%s; their reasons are in %s)",
			len(waived), strings.Join(waived, ", "), reports.SummaryFile))
	}
	if !slices.Equal(re.Why, m.Why) && len(re.Why)+len(m.Why) > 0 {
		bad("the manifest gives other reasons for its verdict than the scenarios do")
	}
	problems, notes := coherence(sum, run, m.Profile, suite)
	for _, p := range problems {
		bad("%s", p)
	}
	v.Notes = append(v.Notes, notes...)
}

func sameCounts(a, b map[string]int) bool {
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	for k, n := range b {
		if a[k] != n {
			return false
		}
	}
	return true
}
