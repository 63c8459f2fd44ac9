package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
	"lab/internal/verdict"
)

// From a mailbox to a verdict with no lab file: each seed series, as a
// list delivers it (b4 am's .mbx and .cover, a cover letter with its
// base-commit, trailers), made by git format-patch at test time, run on
// Debian's tarball at 1 vCPU under icount. Debian already carries every
// seed: lab must find that out (revert mode), and the rows the seed's lab
// judges must come out as that lab's icount run says. One boot a variant:
// under icount an image gives one figure, so a second boot would repeat
// the first (the direction is read from the figures, not from a p-value).
//
// The objpool seed is read and resolved from its mailbox as lab run does
// it, not built: its revert changes include/linux/kprobes.h, whose 67
// dependents no other test builds, and the shared build folder then
// compiles them again for the next kernel of the tarball's header (two
// builds of some 50 CPU-s each on a fresh machine, no ccache). Its kernels
// and verdict are the committed example's (results/examples/kretprobe-objpool)
// and `lab run labs/kretprobe-objpool.yaml`'s.
func TestSeriesFromAMailbox(t *testing.T) {
	testenv.E2E(t, "lab run --series builds and boots real kernels")
	t.Parallel() // see TestTrackAStream
	for _, seed := range []struct {
		name, subject string
		patches       int
		benchmarks    string
		// want is how each benchmark moves at one producer, as the seed's
		// lab run at 1 vCPU under icount found it: +1 faster beyond the
		// floor, -1 slower beyond it, 0 within it. objpool's per-CPU pool
		// costs path length on one CPU (-4.12 %); its gain is in scaling.
		// syscall-count, named, is the control each seed checks stays
		// still; with --no-controls usermode-count is not another guest
		// second in every boot.
		want map[string]int
	}{
		{name: "uprobe-srcu", subject: "uprobes: lockless lookup", patches: 1, benchmarks: "uprobe-nop,syscall-count",
			want: map[string]int{"uprobe-nop": +1, "syscall-count": 0}},
		{name: "uprobe-lazy-buffer", subject: "uprobes: two common case speed ups", patches: 2, benchmarks: "uretprobe-nop,syscall-count",
			want: map[string]int{"uretprobe-nop": +1, "syscall-count": 0}},
	} {
		t.Run(seed.name, func(t *testing.T) {
			ctx := context.Background()
			cache := testbed.DefaultCache()
			mbx := seedMailbox(t, ctx, cache, seed.name, seed.subject)
			results := t.TempDir()
			var stdout, stderr strings.Builder
			code := runMainIn(ctx, []string{"run", "--series", mbx, "--accel", "tcg", "--cpus", "1", "--producers", "1", "--measure", "icount",
				"--benchmarks", seed.benchmarks, "--no-controls", "--boots", "1", "--duration", "250ms", "--warmup", "0s", "--cache", cache, "--results", results}, nil, &stdout, &stderr)
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			patches := fmt.Sprintf("%d patch", seed.patches)
			if seed.patches > 1 {
				patches += "es"
			}
			for _, w := range []string{"lab: no lab file: this lab", "\nmode: auto\n",
				fmt.Sprintf("series: [PATCH v2 0/%d] %s (v2, %s, b4 mbox, base-commit ", seed.patches, seed.subject, patches),
				fmt.Sprintf("mode auto: revert: every patch applies in reverse (%s): the source already carries this series", patches)} {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q", w)
				}
			}
			dirs, _ := filepath.Glob(filepath.Join(results, "*", "*", runfolder.ResultsFile))
			if len(dirs) != 1 {
				t.Fatalf("run folders: %v", dirs)
			}
			f, res, err := runfolder.Load(filepath.Dir(dirs[0]))
			if err != nil {
				t.Fatal(err)
			}
			s := res.First()
			if s.Mode != series.ModeRevert || s.ModeAsked != spec.ModeAuto || s.Kind != series.KindMbox || s.Cover == nil || s.Version != 2 ||
				!strings.Contains(s.Base, "cannot be checked against the tarball") || len(s.Patches) != seed.patches || len(s.Patches[0].Trailers) < 2 {
				t.Errorf("series record %+v", s)
			}
			if _, err := spec.Load(f.Lab()); err != nil || res.LabFile != f.Lab() || len(res.Repeat) == 0 {
				t.Errorf("lab.yaml: %v; lab file %s, repeat %q", err, res.LabFile, res.Repeat)
			}
			checkDirections(t, res, seed.want)
		})
	}
}

// checkDirections checks how each benchmark of want moved at one producer
// in res: +1 faster beyond the floor, -1 slower beyond it, 0 within it.
func checkDirections(t *testing.T, res *results.Run, want map[string]int) {
	t.Helper()
	seen := map[string]bool{}
	for _, tb := range verdict.Tables(res) {
		for _, r := range tb.Rows {
			w, ok := want[r.Benchmark]
			if r.Producers != 1 || r.Metric != verdict.MetricRate || !ok {
				continue
			}
			seen[r.Benchmark] = true
			floor := max(r.Change.FloorPct, verdict.MinICountFloorPct)
			got := 0
			switch {
			case r.Change.Pct > floor && r.Change.Lo > 0:
				got = +1
			case r.Change.Pct < -floor && r.Change.Hi < 0:
				got = -1
			}
			if got != w {
				t.Errorf("%s: %+.3f %% [%+.3f, %+.3f], floor %.3f %%: moved %+d, want %+d", r.Benchmark, r.Change.Pct, r.Change.Lo, r.Change.Hi, floor, got, w)
			}
		}
	}
	for b := range want {
		if !seen[b] {
			t.Errorf("no %s row at one producer", b)
		}
	}
}

// TestSeedMailboxResolves: the objpool seed's mailbox (two patches, one
// of them to a header) is read as lab run --series reads it, and mode auto
// finds that the source carries it: its baseline is the revert.
func TestSeedMailboxResolves(t *testing.T) {
	testenv.E2E(t, "resolves a seed series from a mailbox on Debian's tree")
	ctx := context.Background()
	cache := testbed.DefaultCache()
	const name, subject = "kretprobe-objpool", "kprobes: kretprobe scalability improvement"
	s, err := series.Open(seedMailbox(t, ctx, cache, name, subject), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind != series.KindMbox || s.Cover == nil || s.Version != 2 || len(s.Patches) != 2 || len(s.Patches[0].Trailers) < 2 ||
		s.Cover.Subject != subject || s.Cover.Total != 2 || s.BaseCommit == "" {
		t.Errorf("series %s: kind %s, version %d, cover %+v, %d patches", s.Name, s.Kind, s.Version, s.Cover, len(s.Patches))
	}
	lab, err := spec.Load(filepath.Join("..", "..", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := source.Prepare(ctx, source.Origin(lab.Source), cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	got, err := tree.ResolveSeries(ctx, []*series.Series{s}, spec.ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != series.ModeRevert || !strings.Contains(got.Why, "every patch applies in reverse (2 patches): the source already carries this series") ||
		len(got.Each) != 1 || got.Each[0].Commits.Patched != tree.BaseHash || got.Baseline == tree.BaseHash {
		t.Errorf("resolved %+v: want the revert as the baseline and the source as the series' kernel", got)
	}
}

// seedMailbox makes a seed series (patches/NAME) into what b4 am writes,
// NAME.mbx and NAME.cover, with git format-patch --cover-letter: the files
// the series touches, as the source has them without it, are committed in
// a scratch repository, the series is applied there with git am, and a
// trailer is added to each patch. It returns the .mbx.
func seedMailbox(t *testing.T, ctx context.Context, cache, name, subject string) string {
	t.Helper()
	lab, err := spec.Load(filepath.Join("..", "..", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ser, err := series.Load(lab.SeriesPath())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := source.Prepare(ctx, source.Origin(lab.Source), cache, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	without, err := tree.Variants(ctx, ser, series.ModeRevert)
	if err != nil {
		tree.Close()
		t.Fatal(err)
	}
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=lab", "-c", "user.email=lab@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	for _, p := range ser.Patches {
		for _, file := range p.Files {
			data := git(tree.Dir, "show", without.Baseline+":"+file)
			os.MkdirAll(filepath.Join(repo, filepath.Dir(file)), 0o755)
			os.WriteFile(filepath.Join(repo, file), []byte(data), 0o644)
		}
	}
	tree.Close()
	git(repo, "init", "-q")
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "base")
	base := strings.TrimSpace(git(repo, "rev-parse", "HEAD"))
	for _, p := range ser.Patches {
		git(repo, "am", "-q", p.Path)
	}
	mbox := git(repo, "format-patch", "--cover-letter", "--stdout", "-v2", "--base="+base, base+"..HEAD")
	mbox = strings.Replace(mbox, "*** SUBJECT HERE ***", subject, 1)
	mbox = strings.Replace(mbox, "*** BLURB HERE ***", "The "+name+" seed series, as b4 am writes it.", 1)
	mails := strings.SplitAfter(mbox, "\n-- \n")
	for i, m := range mails[1:] { // every patch; the cover letter first
		mails[i+1] = strings.Replace(m, "\n---\n", "\nAcked-by: Ann Other <ann@example.org>\nLink: https://lore.kernel.org/r/seed@example.org\n---\n", 1)
	}
	mbox = strings.Join(mails, "")
	i := strings.Index(mbox[1:], "\nFrom ") + 1
	out := filepath.Join(t.TempDir(), "v2_20240901_author_"+strings.NewReplacer("-", "_", ":", "", " ", "_").Replace(name))
	if err := os.WriteFile(out+".cover", []byte(mbox[:i+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".mbx", []byte(mbox[i+1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return out + ".mbx"
}
