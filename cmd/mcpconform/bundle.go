package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpconform/mcpconform/internal/bundle"
	"github.com/mcpconform/mcpconform/internal/cli"
	"github.com/mcpconform/mcpconform/reports"
)

const bundleUsage = `Usage: mcpconform bundle DIR [-o ARCHIVE] [--sign-key FILE] [--profile FILE]
       mcpconform bundle keygen NAME

Packs the report directory DIR (mcpconform run --out DIR) into a
certification bundle: a tar.gz of every file of the report under report/,
and manifest.json with the SHA-256 of each, what was tested (the target's
serverInfo, the profile with its credentials redacted), the harness version
and commit, and the verdict. With --sign-key the manifest is signed
(ed25519, manifest.sig). A report whose files or histories contradict its
verdict is refused, and so is one whose parts disagree: a --profile that
is not the one the run used, a run of a selection (--tags, --id) rather than
the whole suite, exchanges the run could not have made. mcpconform verify
checks a bundle.

keygen writes a new ed25519 key pair: NAME (the private key, PKCS #8 PEM,
mode 0600) and NAME.pub (PKIX PEM), the formats of
'openssl genpkey -algorithm ed25519' and 'openssl pkey -pubout'.

Flags:
`

func bundleCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "keygen" {
		return keygenCmd(args[1:], stdout, stderr)
	}
	fs := newFlagSet("bundle", bundleUsage, stderr)
	out := fs.String("o", "", "archive to write (default: DIR.bundle.tar.gz)")
	keyFile := fs.String("sign-key", "", "sign the manifest with this ed25519 private key (PEM; see keygen)")
	profile := fs.String("profile", "", "the profile the run used; it goes into the manifest with every credential redacted")
	pos, code, ok := cli.ParseArgs(fs, args, 1)
	if !ok {
		return code
	}
	dir := pos[0]
	var opt bundle.Options
	var err error
	if opt.Suite, err = bundle.CurrentSuite(); err != nil {
		fmt.Fprintf(stderr, "mcpconform %v\n", err)
		return 2
	}
	if opt.Key, err = readKey(*keyFile, bundle.ParsePrivateKey); err != nil {
		fmt.Fprintf(stderr, "mcpconform bundle: --sign-key: %v\n", err)
		return 2
	}
	if *profile != "" {
		if opt.Profile, err = os.ReadFile(*profile); err != nil {
			fmt.Fprintf(stderr, "mcpconform bundle: --profile: %v\n", err)
			return 2
		}
	}
	if *out == "" {
		*out = strings.TrimRight(filepath.Clean(dir), string(filepath.Separator)) + ".bundle.tar.gz"
	}
	var buf bytes.Buffer
	m, err := bundle.Create(dir, &buf, opt)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform %v\n", err)
		return 2
	}
	if err := reports.WriteFileAtomic(*out, buf.Bytes()); err != nil {
		fmt.Fprintf(stderr, "mcpconform bundle: %v\n", err)
		return 2
	}
	signed := "unsigned"
	if opt.Key != nil {
		signed = "signed by " + bundle.Fingerprint(opt.Key.Public().(ed25519.PublicKey))
	}
	fmt.Fprintf(stdout, "%s: %d files, verdict %s (level %s), %s\n", *out, len(m.Files), m.Result, m.Level, signed)
	if opt.Profile == nil && m.Target.Kind != "reference" {
		fmt.Fprintln(stdout, "note: no --profile given: the manifest names the profile only by its name")
	}
	return 0
}

func keygenCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, "Usage: mcpconform bundle keygen NAME\n\nWrites an ed25519 key pair: NAME (private, PEM, mode 0600) and NAME.pub (public, PEM).\n")
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	name := args[0]
	for _, p := range []string{name, name + ".pub"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "mcpconform bundle keygen: %s exists; not overwriting a key\n", p)
			return 2
		}
	}
	priv, pub, err := bundle.GenerateKey()
	if err == nil {
		err = os.WriteFile(name, priv, 0o600)
	}
	if err == nil {
		err = os.WriteFile(name+".pub", pub, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform bundle keygen: %v\n", err)
		return 2
	}
	k, _ := bundle.ParsePublicKey(pub)
	fmt.Fprintf(stdout, "private key: %s (keep it secret)\npublic key:  %s.pub (%s)\n", name, name, bundle.Fingerprint(k))
	return 0
}

const verifyUsage = `Usage: mcpconform verify ARCHIVE [--pub-key FILE] [--profile FILE]

Checks a certification bundle (mcpconform bundle): every file against the
manifest's SHA-256, no file the manifest does not list, the signature over
the manifest (required, and by that key, with --pub-key), the profile (the
given one, with --profile), and the verdict, recomputed from the report's
files: every check recheck knows from its history, the run verdict from the
scenarios, both compared with summary.json and the manifest. The report must
hold the whole suite (checked when this binary is the run's harness build)
and only exchanges with the tested URLs within the run's time.

What it proves depends on the signature. Unsigned, or signed by a key not
given with --pub-key, a bundle proves only that its files agree with each
other: whoever edits one can recompute the hashes, or sign with a key of
their own. Signed by the --pub-key you trust, it proves the report is the
one that key signed; it cannot prove the signer ran the harness honestly.
Pass --profile to be sure the bundle is for the product you expect, not an
older bundle of another.

Exit codes: 0 the bundle is intact and its verdict recomputes (whatever that
verdict is), 1 a mismatch, 2 usage or an unreadable archive.

Flags:
`

func verifyCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", verifyUsage, stderr)
	pubFile := fs.String("pub-key", "", "the signer's ed25519 public key (PEM); the bundle must be signed by it")
	profile := fs.String("profile", "", "the profile the bundle must have been made for (compared with its credentials redacted)")
	pos, code, ok := cli.ParseArgs(fs, args, 1)
	if !ok {
		return code
	}
	var want bundle.Expect
	var err error
	if want.Key, err = readKey(*pubFile, bundle.ParsePublicKey); err != nil {
		fmt.Fprintf(stderr, "mcpconform verify: --pub-key: %v\n", err)
		return 2
	}
	if *profile != "" {
		if want.Profile, err = os.ReadFile(*profile); err != nil {
			fmt.Fprintf(stderr, "mcpconform verify: --profile: %v\n", err)
			return 2
		}
	}
	if want.Suite, err = bundle.CurrentSuite(); err != nil {
		fmt.Fprintf(stderr, "mcpconform verify: %v\n", err)
		return 2
	}
	f, err := os.Open(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform verify: %v\n", err)
		return 2
	}
	defer f.Close()
	v, err := bundle.Verify(f, want)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform verify: %v\n", err)
		return 2
	}
	m := v.Manifest
	run := reports.Run{Tool: m.Harness.Tool, Version: m.Harness.Version, Commit: m.Harness.Commit, Target: m.Target, Started: m.Started}
	fmt.Fprintf(stdout, "bundle:    %s, %d files, made %s by mcpconform %s\n", pos[0], len(m.Files), m.Created.Format("2006-01-02 15:04 MST"), m.Bundler)
	fmt.Fprintf(stdout, "tested:    %s\n", reports.Subject(run))
	switch {
	case v.Pinned:
		fmt.Fprintf(stdout, "signature: good, by the given key %s\n", v.KeyFingerprint)
	case v.Signed:
		fmt.Fprintf(stdout, "signature: good, by %s (not pinned: pass --pub-key to check who signed)\n", v.KeyFingerprint)
	default:
		fmt.Fprintln(stdout, "signature: none")
	}
	fmt.Fprintf(stdout, "verdict:   %s (level %s), %d scenarios; recomputed: %s, %d dispatch checks from histories\n",
		m.Result, m.Level, m.Total, orUnknown(v.Rechecked.Result), v.Rechecked.Checks)
	for _, n := range v.Notes {
		fmt.Fprintf(stdout, "note:      %s\n", n)
	}
	if !v.OK() {
		for _, p := range v.Problems {
			fmt.Fprintf(stdout, "MISMATCH:  %s\n", p)
		}
		fmt.Fprintf(stdout, "NOT VERIFIED: %d problems\n", len(v.Problems))
		return 1
	}
	switch {
	case v.Pinned:
		fmt.Fprintln(stdout, "VERIFIED")
	case v.Signed:
		fmt.Fprintln(stdout, "VERIFIED (integrity only: signed by a key not given with --pub-key)")
	default:
		fmt.Fprintln(stdout, "VERIFIED (integrity only: unsigned)")
	}
	return 0
}

// readKey reads a PEM key file; no file is no key.
func readKey[K any](file string, parse func([]byte) (K, error)) (K, error) {
	var none K
	if file == "" {
		return none, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return none, err
	}
	return parse(b)
}

func orUnknown(s string) string {
	if s == "" {
		return "not recomputed"
	}
	return s
}
