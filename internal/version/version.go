// Package version says which version of lab is running: the one fact a
// result and a report need to be rerun.
package version

import (
	"os/exec"
	"runtime/debug"
	"strings"
)

// Lab returns lab's version: the commit the binary was built from, as `go
// build` records it (with "-dirty" for uncommitted changes), or, for a
// binary that carries none (go test, go run), `git describe` of the checkout
// at root. "unknown" when neither says.
func Lab(root string) string {
	if v := fromBuildInfo(); v != "" {
		return v
	}
	if root != "" {
		out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty", "--abbrev=7").Output()
		if err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return "unknown"
}

func fromBuildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) < 7 {
		return ""
	}
	return rev[:7] + dirty
}
