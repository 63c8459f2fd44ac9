package track

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/spec"
	"lab/internal/testenv"
)

// gitLab is labs/uprobe-srcu.yaml on a tiny git tree with a Makefile and
// a Kconfig (what lab's check asks of a Linux tree) and one commit, main.
func gitLab(t *testing.T) *spec.Lab {
	t.Helper()
	lab, err := spec.Load("../../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"Makefile", "Kconfig"} {
		os.WriteFile(filepath.Join(dir, f), []byte("# "+f+"\n"), 0o644)
	}
	git := testenv.Git(t, dir)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "base"}} {
		git(args...)
	}
	lab.Source = spec.Source{Git: dir, Base: "main"}
	lab.Matrix.CPUs, lab.Matrix.Producers = []int{1}, []int{1}
	return lab
}

// A lab that is not on a git tree, refs the tree does not have, a history
// that is not lab's: each is said before any folder is made.
func TestRunRefusesBeforeBuilding(t *testing.T) {
	tarball, err := spec.Load("../../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	notHistory := filepath.Join(t.TempDir(), "notes.db")
	os.WriteFile(notHistory, []byte("these are not the droids"), 0o644)
	for _, tc := range []struct {
		name     string
		lab      *spec.Lab
		from, to string
		history  string
		want     string
	}{
		{"a tarball lab", tarball, "v6.11", "v6.12", "", "must be a git tree"},
		{"no --from", gitLab(t), "", "main", "", "needs --from and --to"},
		{"an unknown --from", gitLab(t), "v0.0-nowhere", "main", "", `"v0.0-nowhere" is not a commit`},
		{"an unknown --to", gitLab(t), "main", "no-such-branch", "", `"no-such-branch" is not a commit`},
		{"a file that is not a history", gitLab(t), "main", "main", notHistory, "not an SQLite database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := t.TempDir()
			var out bytes.Buffer
			_, err := Run(context.Background(), Options{Lab: tc.lab, From: tc.from, To: tc.to, History: tc.history,
				CacheDir: t.TempDir(), ResultsDir: results, Accel: "tcg", Out: &out})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if made, _ := os.ReadDir(results); len(made) > 0 {
				t.Errorf("the results folder has %d entries: want nothing made", len(made))
			}
		})
	}
}
