package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Set by `make build` with -ldflags "-X main.buildVersion=… -X main.buildCommit=…": the
// project's version (openapi/harness.yaml's info.version, which the runtime also reports) and
// the commit, "-dirty" when the tree had changes. A plain `go build` leaves them empty and
// version falls back to what Go recorded.
var buildVersion, buildCommit string

// version is what --version prints: the stamped version and commit when built with make, else
// the module version harnessctl was built from (go install …@v1.2.3 records it) with the VCS
// revision when the build recorded one; "devel" when there is none of these.
func version() string {
	if buildVersion != "" {
		if buildCommit != "" {
			return buildVersion + " (commit " + buildCommit + ")"
		}
		return buildVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "-dirty"
			}
		}
	}
	if rev != "" {
		short := rev[:min(12, len(rev))]
		if !strings.Contains(v, short) {
			v += fmt.Sprintf(" (commit %s%s)", short, modified)
		}
	}
	return v
}
