package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/series"
	"lab/internal/spec"
)

// b4Series writes into dir what b4 am writes for a two-patch v2 series
// with trailers: NAME.mbx with the patches and NAME.cover beside it, made
// by git format-patch --cover-letter at test time. It returns the .mbx.
func b4Series(t *testing.T, dir string) string {
	t.Helper()
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=A U Thor", "-c", "user.email=author@example.org", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	file := filepath.Join(repo, "kernel", "corpus.c")
	os.MkdirAll(filepath.Dir(file), 0o755)
	git("init", "-q")
	os.WriteFile(file, []byte("int corpus = 1;\n"), 0o644)
	git("add", ".")
	git("commit", "-qm", "base")
	base := strings.TrimSpace(git("rev-parse", "HEAD"))
	for i, body := range []string{"int corpus = 2;\n", "int corpus = 3;\n"} {
		os.WriteFile(file, []byte(body), 0o644)
		git("commit", "-qam", "corpus: step "+string(rune('1'+i))+"\n\nA step.\n\nAcked-by: Ann Other <ann@example.org>\nSigned-off-by: A U Thor <author@example.org>")
	}
	mbox := git("format-patch", "--cover-letter", "--stdout", "-v2", "--base="+base, base+"..HEAD")
	mbox = strings.Replace(mbox, "*** SUBJECT HERE ***", "corpus: two steps", 1)
	i := strings.Index(mbox[1:], "\nFrom ") + 1
	name := filepath.Join(dir, "v2_20261202_author_corpus_two_steps")
	writeFile(t, name+".cover", mbox[:i+1])
	writeFile(t, name+".mbx", mbox[i+1:])
	return name + ".mbx"
}

// labIn runs lab with stdin, in the checkout root ($LAB_ROOT).
func labIn(t *testing.T, root string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("LAB_ROOT", root)
	var stdout, stderr strings.Builder
	code := runMainIn(context.Background(), args, stdin, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// newCheckout is a copy of the corpus checkout, and a TMPDIR of its own
// (which must stay empty: a series opened for a refusal leaves nothing).
func newCheckout(t *testing.T) (root, tmp string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "checkout")
	copyTree(t, "testdata/corpus/checkout", root)
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return root, tmp
}

// files lists every file and folder under root, for "nothing changed".
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		out = append(out, p)
		return nil
	})
	return out
}

// lab new keeps a series as labs/NAME.yaml and patches/NAME/: the lab
// lab run --series would make, with the series by name and mode auto,
// and the patches a file each with the cover letter kept apart.
func TestNew(t *testing.T) {
	for _, from := range []string{"b4 mbox", "standard input", "series folder"} {
		t.Run(from, func(t *testing.T) {
			root, tmp := newCheckout(t)
			mbx := b4Series(t, t.TempDir())
			args, stdin := []string{"new", "mine", "--series", mbx}, io.Reader(nil)
			patches, cover := 2, true
			switch from {
			case "standard input":
				data, _ := os.ReadFile(strings.TrimSuffix(mbx, ".mbx") + ".cover")
				more, _ := os.ReadFile(mbx)
				args[3], stdin = "-", strings.NewReader(string(data)+string(more))
			case "series folder":
				args[3], patches, cover = filepath.Join(root, "patches", "ok"), 1, false
			}
			code, stdout, stderr := labIn(t, root, stdin, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			labFile, dir := filepath.Join(root, "labs", "mine.yaml"), filepath.Join(root, "patches", "mine")
			if !strings.Contains(stdout, "wrote "+labFile+" and "+dir+"/ (") || !strings.Contains(stdout, "run it: lab run "+labFile+"\n") {
				t.Errorf("stdout:\n%s", stdout)
			}
			lab, err := spec.Load(labFile)
			if err != nil {
				t.Fatal(err)
			}
			if lab.Series != "mine" || lab.Mode != spec.ModeAuto || lab.Root != root || !slices.Equal(lab.Matrix.Benchmarks, spec.DefaultBenchmarks) {
				t.Errorf("lab: series %q, mode %q, root %s, benchmarks %v", lab.Series, lab.Mode, lab.Root, lab.Matrix.Benchmarks)
			}
			text, _ := os.ReadFile(labFile)
			for _, w := range []string{"# mine: ", "# Kept by lab new from ", "# mode auto: lab tries the series forward and in reverse", "\nname: mine\n", "\nseries: mine\n", "\nmode: auto\n"} {
				if !strings.Contains(string(text), w) {
					t.Errorf("labs/mine.yaml lacks %q:\n%s", w, text)
				}
			}
			if cover && !strings.Contains(string(text), "# mine: [PATCH v2 0/2] corpus: two steps (v2, 2 patches, ") {
				t.Errorf("labs/mine.yaml does not name the series as the list did:\n%s", text)
			}
			s, err := series.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Patches) != patches {
				t.Errorf("patches/mine holds %d patches, want %d", len(s.Patches), patches)
			}
			if _, err := os.Stat(filepath.Join(dir, "0000-cover-letter.patch")); (err == nil) != cover {
				t.Errorf("cover letter kept: %v, want %v", err == nil, cover)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
		})
	}
}

// lab new overwrites nothing and, refusing, writes nothing.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string // MBX: a b4 series; ROOT: the checkout
		files map[string]string
		want  string
		code  int
	}{
		{"a lab of that name", []string{"new", "mine", "--series", "MBX"}, map[string]string{"labs/mine.yaml": "name: mine\n"}, "labs/mine.yaml exists: lab new overwrites nothing", 1},
		{"a series folder of that name", []string{"new", "mine", "--series", "MBX"}, map[string]string{"patches/mine/README": "x\n"}, "patches/mine exists: lab new overwrites nothing", 1},
		{"the name of a path", []string{"new", "../mine", "--series", "MBX"}, nil, `name "../mine": a name, not a path`, 1},
		{"a hidden name", []string{"new", ".mine", "--series", "MBX"}, nil, `name ".mine": a name cannot start with a dot`, 1},
		{"a cover letter only", []string{"new", "mine", "--series", "COVER"}, nil, "only a cover letter", 1},
		{"no series there", []string{"new", "mine", "--series", "ROOT/nope.mbx"}, nil, "nope.mbx does not exist", 1},
		{"no --series", []string{"new", "mine"}, nil, "new mine: --series PATH is the series to keep", 2},
		{"two names", []string{"new", "a", "b", "--series", "MBX"}, nil, "new takes one name (lab new NAME --series PATH), got 2", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, tmp := newCheckout(t)
			mbx := b4Series(t, t.TempDir())
			for name, body := range tc.files {
				writeFile(t, filepath.Join(root, name), body)
			}
			before := files(t, root)
			var args []string
			for _, a := range tc.args {
				a = strings.ReplaceAll(a, "MBX", mbx)
				a = strings.ReplaceAll(a, "COVER", strings.TrimSuffix(mbx, ".mbx")+".cover")
				args = append(args, strings.ReplaceAll(a, "ROOT", root))
			}
			code, _, stderr := labIn(t, root, nil, args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s", code, tc.code, tc.want, stderr)
			}
			if after := files(t, root); !slices.Equal(before, after) {
				t.Errorf("the checkout changed:\nbefore %v\nafter  %v", before, after)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
		})
	}
}

// lab run --series refuses a bad series, a lab it cannot make and a
// command line it cannot carry out before anything is written: no run
// folder, no series folder in TMPDIR, no heavy step (see the corpus).
func TestRunSeriesRefusesBeforeAnythingIsWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"a cover letter only", []string{"run", "--series", "COVER"}, "only a cover letter", 1},
		{"a cover letter only, with a lab file", []string{"run", "ROOT/labs/t.yaml", "--series", "COVER"}, "only a cover letter", 1},
		{"a cut mbox from standard input", []string{"run", "--series", "-"}, "the mail is cut short", 1},
		{"build: a cover letter only", []string{"build", "--series", "COVER"}, "only a cover letter", 1},
		{"two lab files", []string{"run", "ROOT/labs/t.yaml", "ROOT/labs/t.yaml", "--series", "MBX"}, "run --series takes at most one lab file, got 2", 2},
		{"a bad --mode", []string{"run", "--series", "MBX", "--mode", "sideways"}, `with the command-line flags: mode "sideways": want "apply", "revert" or "auto"`, 2},
		{"a bad flag for the lab made", []string{"run", "--series", "MBX", "--boots", "0"}, "with the command-line flags: boots 0: want at least 1", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, tmp := newCheckout(t)
			writeFile(t, filepath.Join(root, "labs", "t.yaml"), good)
			mbx := b4Series(t, t.TempDir())
			blocker := filepath.Join(t.TempDir(), "blocker")
			writeFile(t, blocker, "not a folder\n")
			args := []string{}
			for _, a := range tc.args {
				a = strings.ReplaceAll(a, "MBX", mbx)
				a = strings.ReplaceAll(a, "COVER", strings.TrimSuffix(mbx, ".mbx")+".cover")
				args = append(args, strings.ReplaceAll(a, "ROOT", root))
			}
			args = append(args, "--cache", filepath.Join(blocker, "cache"), "--results", filepath.Join(blocker, "results"))
			data, _ := os.ReadFile(mbx)
			start := time.Now()
			code, stdout, stderr := labIn(t, root, strings.NewReader(string(data[:len(data)-40])), args...)
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %v: refusals must be quick", time.Since(start))
			}
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d; stderr does not say %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
			if strings.Contains(stderr, blocker) || strings.Contains(stderr, "missing tools") {
				t.Errorf("went on to a heavy step:\n%s", stderr)
			}
			if stdout != "" {
				t.Errorf("printed a lab it did not run:\n%s", stdout)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left in TMPDIR: %v", ents)
			}
		})
	}
}

// The flags that repeat a run from its lab.yaml: the run's own, not
// --series, the lab file or the lab's flags (lab.yaml holds those).
func TestRepeatFlags(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"--series", "-", "--cache", "/c", "--boots", "2"}, []string{"--cache", "/c"}},
		{[]string{"labs/x.yaml", "--series=v2.mbx", "-no-build", "--cpus=1", "--accel", "tcg", "--fail-on-regression"}, []string{"-no-build", "--accel", "tcg", "--fail-on-regression"}},
		{[]string{"--mode", "auto", "--junit", "j.xml", "labs/x.yaml"}, []string{"--junit", "j.xml"}},
	} {
		fs := flagSetOf(t, "run")
		if got := repeatFlags(fs, tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("repeatFlags(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// flagSetOf is the flag set of a lab command.
func flagSetOf(t *testing.T, name string) *flag.FlagSet {
	t.Helper()
	for _, c := range commands() {
		if c.name == name {
			fs := flag.NewFlagSet("lab "+name, flag.ContinueOnError)
			c.flags(fs)
			return fs
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}

// exitNew is a lab new that keeps a series, for the exit-code table.
func exitNew(t *testing.T) int {
	root, _ := newCheckout(t)
	code, _, stderr := labIn(t, root, nil, "new", "mine", "--series", b4Series(t, t.TempDir()))
	t.Log(stderr)
	return code
}
