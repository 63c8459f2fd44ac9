package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// --series takes a path: a series' name, which a lab file's series: takes,
// is not one, and the error names the folder it means.
func TestOpenSeriesFlag(t *testing.T) {
	root, _ := newCheckout(t)
	t.Setenv("LAB_ROOT", root)
	ok := filepath.Join(root, "patches", "ok")
	for _, tc := range []struct{ arg, want string }{
		{"ok", "series ok does not exist (looked for "},
		{"ok", "; did you mean --series " + ok + ", the folder patches/ok? (--series takes a path; a lab file's series: ok is that folder)"},
		{"elsewhere/ok/", "did you mean --series " + ok},
		{"nope", "series nope does not exist (looked for "},
		{ok, ""},
	} {
		s, err := openSeriesFlag(tc.arg, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--series %s: %v", tc.arg, err)
		case tc.want == "":
			s.Close()
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Errorf("--series %s: %v, want %q", tc.arg, err, tc.want)
		case tc.arg == "nope" && strings.Contains(err.Error(), "did you mean"):
			t.Errorf("--series nope: %v: a hint without a folder", err)
		}
	}
}
