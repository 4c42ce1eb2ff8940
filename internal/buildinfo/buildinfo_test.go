package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		bi               *debug.BuildInfo
		ldVersion, ldRev string
		want             Info
		str              string
	}{
		{name: "no build info", want: Info{Version: Release}, str: Release + " (commit unknown)"},
		{name: "checkout build", bi: &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", rev, "vcs.time", "2026-12-03T12:00:00Z", "vcs.modified", "false")},
			want: Info{Version: Release, Commit: rev, Time: "2026-12-03T12:00:00Z", GoVersion: "go1.25.0"},
			str:  Release + " (commit 0123456789ab, go1.25.0)"},
		{name: "dirty checkout", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings("vcs.revision", rev, "vcs.modified", "true")},
			want: Info{Version: Release, Commit: rev + "-dirty"}, str: Release + " (commit 0123456789ab-dirty)"},
		{name: "go install at a tag", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			want: Info{Version: "1.4.0"}, str: "1.4.0 (commit unknown)"},
		{name: "go install at a commit", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203120000-0123456789ab"}},
			want: Info{Version: "0.0.0-20261203120000-0123456789ab", Commit: "0123456789ab"}},
		{name: "linker flags win", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings("vcs.revision", rev, "vcs.modified", "true")},
			ldVersion: "v2.0.0", ldRev: "feedface", want: Info{Version: "2.0.0", Commit: "feedface"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuild(tc.bi, tc.ldVersion, tc.ldRev)
			if got != tc.want {
				t.Errorf("fromBuild = %+v, want %+v", got, tc.want)
			}
			if tc.str != "" && got.String() != tc.str {
				t.Errorf("String = %q, want %q", got.String(), tc.str)
			}
		})
	}
}
