package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mcpconform/mcpconform/reports"
)

// The repository root, where action.yml and .github/action live.
const repoRoot = "../.."

// actionRun is one run of .github/action/run.sh as the action's run step
// makes it, with the step summary and the step outputs in files.
type actionRun struct {
	code            int
	summary, output string
	log             string
}

// runAction runs the action's script with inputs (INPUT_* variables) and
// the test binary as the harness: it is mcpconform when beMain is set, so
// no second build is needed, and it starts the reference gateway as the
// built binary would.
func runAction(t *testing.T, inputs map[string]string) actionRun {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the action's script")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	summary, output := filepath.Join(dir, "step-summary.md"), filepath.Join(dir, "github-output")
	cmd := exec.Command(bash, filepath.Join(repoRoot, ".github", "action", "run.sh"))
	cmd.Env = append(os.Environ(), beMain+"=1", "MCPCONFORM_BIN="+exe, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+output)
	for k, v := range inputs {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	log, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run.sh: %v", err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return string(b)
	}
	return actionRun{code: code, summary: read(summary), output: read(output), log: string(log)}
}

// The action's script passes the harness's exit code on, appends summary.md
// to the step summary and writes the verdict and the report directory as
// step outputs: a pass, a failure (a bug switch) against the pass as its
// baseline, and a baseline that is not there (exit 2 before any run).
func TestActionScript(t *testing.T) {
	dir := t.TempDir()
	passed := filepath.Join(dir, "passed")
	pass := runAction(t, map[string]string{"INPUT_TARGET": "reference", "INPUT_OUT": passed, "INPUT_ARGS": "--id retry-01"})
	if pass.code != 0 {
		t.Fatalf("pass: exit %d, want 0\n%s", pass.code, pass.log)
	}
	wantLines(t, "pass: step summary", pass.summary, "## mcpconform: PASS (level full")
	wantLines(t, "pass: outputs", pass.output, "verdict=PASS", "report-dir="+passed)
	md, err := os.ReadFile(filepath.Join(passed, reports.MarkdownFile))
	if err != nil || string(md) != pass.summary {
		t.Errorf("the step summary is not the report's summary.md (%v)", err)
	}

	failed := filepath.Join(dir, "failed")
	fail := runAction(t, map[string]string{"INPUT_TARGET": "reference", "INPUT_OUT": failed, "INPUT_BASELINE": passed,
		"INPUT_ARGS": "--id retry-01 --bug replay-debits"})
	if fail.code != 1 {
		t.Fatalf("fail: exit %d, want 1\n%s", fail.code, fail.log)
	}
	wantLines(t, "fail: outputs", fail.output, "verdict=FAIL", "report-dir="+failed)
	for _, want := range []string{
		"## mcpconform: FAIL (level full): 1 of 1 scenarios keep the run from a PASS\n",
		"| `retry-01` | failed |",
		"`mcpconform run --target reference --bug replay-debits --id retry-01`",
		"### Against the baseline: PASS → FAIL\n",
		"| `retry-01` | passed | failed |",
		"1 regressions, 0 fixed",
	} {
		if !strings.Contains(fail.summary, want) {
			t.Errorf("fail: the step summary lacks %q:\n%s", want, fail.summary)
		}
	}

	missing := runAction(t, map[string]string{"INPUT_TARGET": "reference", "INPUT_OUT": filepath.Join(dir, "never"),
		"INPUT_BASELINE": filepath.Join(dir, "no-such-report")})
	if missing.code != 2 {
		t.Fatalf("missing baseline: exit %d, want 2\n%s", missing.code, missing.log)
	}
	wantLines(t, "missing baseline: outputs", missing.output, "verdict=ERROR")
	if !strings.HasPrefix(missing.summary, "## mcpconform: ERROR\n") {
		t.Errorf("missing baseline: step summary %q", missing.summary)
	}
}

func wantLines(t *testing.T, what, text string, want ...string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("%s: no line starting %q in:\n%s", what, w, text)
		}
	}
}

// action.yml is a composite action with the inputs the script reads, and
// steps that build from the action's own checkout, run the script and
// upload the report even when the run failed.
func TestActionMetadata(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Name   string
		Inputs map[string]struct {
			Required bool
			Default  string
		}
		Outputs map[string]struct{ Value string }
		Runs    struct {
			Using string
			Steps []struct {
				ID, Uses, Run, If string
				WorkingDirectory  string `yaml:"working-directory"`
				With, Env         map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" {
		t.Errorf("runs.using %q, want composite", action.Runs.Using)
	}
	for _, in := range []string{"target", "profile"} {
		if !action.Inputs[in].Required {
			t.Errorf("input %q is not required", in)
		}
	}
	for _, in := range []string{"probe-url", "level", "baseline", "out", "args", "go-version", "artifact-name"} {
		if i, ok := action.Inputs[in]; !ok || i.Required {
			t.Errorf("input %q missing or required", in)
		}
	}
	if d := action.Inputs["out"].Default; d != "mcpconform-report" {
		t.Errorf("out defaults to %q", d)
	}
	for _, out := range []string{"verdict", "report-dir"} {
		if v := action.Outputs[out].Value; v != "${{ steps.run.outputs."+out+" }}" {
			t.Errorf("output %s = %q", out, v)
		}
	}
	var uses []string
	script := false
	for _, s := range action.Runs.Steps {
		uses = append(uses, s.Uses)
		switch {
		case s.Uses == "actions/upload-artifact@v4" && (s.If != "always()" || s.With["path"] != "${{ inputs.out }}"):
			t.Errorf("the upload step runs if %q, uploads %q; want always(), inputs.out", s.If, s.With["path"])
		case strings.Contains(s.Run, "go build"):
			if s.WorkingDirectory != "${{ github.action_path }}" || !strings.Contains(s.Run, `-o "$RUNNER_TEMP/mcpconform" ./cmd/mcpconform`) {
				t.Errorf("the build step %q in %q", s.Run, s.WorkingDirectory)
			}
		case strings.Contains(s.Run, ".github/action/run.sh"):
			script = s.ID == "run"
			for _, in := range []string{"target", "profile", "probe-url", "level", "baseline", "out", "args"} {
				name := "INPUT_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_"))
				if s.Env[name] != "${{ inputs."+in+" }}" {
					t.Errorf("the run step's %s = %q", name, s.Env[name])
				}
			}
		}
	}
	if !slices.Contains(uses, "actions/setup-go@v5") || !slices.Contains(uses, "actions/upload-artifact@v4") || !script {
		t.Errorf("steps use %q, the script step found: %v", uses, script)
	}
}
