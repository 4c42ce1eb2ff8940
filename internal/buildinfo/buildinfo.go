// Package buildinfo says which harness made a report: its version and the
// commit it was built from, so a report can be traced to the code that
// judged the target.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Release is the version of this source tree; a tagged `go install
// ...@vX.Y.Z` build reports the module version instead.
const Release = "0.1.0"

// version and commit may be set at link time, for builds without Go's own
// VCS stamping (a tarball, -buildvcs=false):
//
//	go build -ldflags "-X github.com/mcpconform/mcpconform/internal/buildinfo.commit=$(git rev-parse HEAD)"
var version, commit string

// Info is what a report records about the harness.
type Info struct {
	Version string `json:"version"`
	// Commit is the VCS revision, with "-dirty" when the tree had local
	// changes; "" when the build carries none (go test, -buildvcs=false).
	Commit    string `json:"commit,omitempty"`
	Time      string `json:"time,omitempty"` // the commit's time, RFC 3339
	GoVersion string `json:"go_version,omitempty"`
}

// Read returns the running binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, commit)
}

// fromBuild prefers what the linker was told, then what Go stamped into
// the binary, then Release.
func fromBuild(bi *debug.BuildInfo, ldVersion, ldCommit string) Info {
	info := Info{Version: Release}
	var modified bool
	if bi != nil {
		info.GoVersion = bi.GoVersion
		// "(devel)" is a build inside the checkout; a module version means
		// `go install module@version`, which is the better name.
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = strings.TrimPrefix(v, "v")
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if info.Commit == "" {
			// A pseudo-version (v0.0.0-20261203120000-abcdef123456) names
			// the commit go install fetched.
			if parts := strings.Split(bi.Main.Version, "-"); len(parts) >= 3 && len(parts[len(parts)-1]) == 12 {
				info.Commit = strings.TrimSuffix(parts[len(parts)-1], "+dirty")
			}
		}
	}
	if ldVersion != "" {
		info.Version = strings.TrimPrefix(ldVersion, "v")
	}
	if ldCommit != "" {
		info.Commit, modified = ldCommit, false
	}
	if modified && info.Commit != "" {
		info.Commit += "-dirty"
	}
	return info
}

// String is the one-line form: "0.1.0 (commit 1a2b3c4d5e6f, go1.25.0)".
func (i Info) String() string {
	var extra []string
	if i.Commit != "" {
		extra = append(extra, "commit "+Short(i.Commit))
	} else {
		extra = append(extra, "commit unknown")
	}
	if i.GoVersion != "" {
		extra = append(extra, i.GoVersion)
	}
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(extra, ", "))
}

// Short is a commit shortened for display, keeping a -dirty mark.
func Short(commit string) string {
	rev, dirty := strings.CutSuffix(commit, "-dirty")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
