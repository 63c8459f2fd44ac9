package runfolder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/results"
)

func TestNewNeverShares(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "uprobe-srcu")
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		f, id, err := New(parent, "20261202-150000")
		if err != nil {
			t.Fatal(err)
		}
		if seen[f.Dir] || filepath.Base(f.Dir) != id {
			t.Errorf("run %d: folder %s (id %s) shared or misnamed", i, f.Dir, id)
		}
		seen[f.Dir] = true
	}
	if !seen[filepath.Join(parent, "20261202-150000-3")] {
		t.Errorf("folders %v: want id, id-2, id-3", seen)
	}
}

func TestSaveLoadSymmetric(t *testing.T) {
	f, _, err := New(t.TempDir(), "run")
	if err != nil {
		t.Fatal(err)
	}
	r := &results.Run{Schema: results.Schema, Lab: "l", RunID: "run", Started: time.Unix(1, 0).UTC()}
	if err := f.Save(r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, ResultsFile)); err != nil {
		t.Fatalf("results.json not where the folder says: %v", err)
	}
	got, back, err := Load(f.Dir)
	if err != nil || got != f || back.Lab != "l" || back.RunID != "run" {
		t.Errorf("Load = %+v, %+v, %v", got, back, err)
	}
}

func TestLoadRefusesWhatIsNotARun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct{ dir, want string }{
		{dir, "not a lab run folder"},
		{file, "is a file, not a run folder"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		if _, _, err := Load(tc.dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s) = %v, want %q", tc.dir, err, tc.want)
		}
	}
}

func TestClearKeepsWhatIsNotLabs(t *testing.T) {
	f := Folder{t.TempDir()}
	for _, p := range []string{ResultsFile, TableFile, "notes.txt", filepath.Join(ReportDir, "report.md"), filepath.Join(Boot(1, "x86_64", "1cpu", "baseline"), "console.log")} {
		os.MkdirAll(filepath.Dir(f.Path(p)), 0o755)
		os.WriteFile(f.Path(p), []byte("x"), 0o644)
	}
	if err := f.Clear(); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(f.Dir)
	if len(left) != 1 || left[0].Name() != "notes.txt" {
		t.Errorf("left %v, want notes.txt alone", left)
	}
}
