package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/internal/bisect"
	"lab/internal/exitcode"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/version"
	"lab/internal/vm"
)

// Two codes of the table, by the names the older tests use.
const (
	exitError = int(exitcode.Failed)
	exitUsage = int(exitcode.Usage)
)

// Committed runs whose gates fail: a significant regression, and claims
// the run did not reproduce (producer counts it did not measure).
const (
	regressed = "../../results/examples/kretprobe-objpool/x86_64-2cpu-quiet"
	unclaimed = example
	otherLab  = "../../results/examples/uprobe-lazy-buffer/x86_64-1cpu-icount"
	// otherMethodRun was measured by the same agent method as otherLab.
	otherMethodRun = "../../results/examples/uprobe-srcu/x86_64-1cpu-icount-bench"
	notAResult     = "testdata/corpus/runs/empty"
	noSuchLab      = "testdata/no-such-lab.yaml"
)

// exitCase is one way a command ends with one code of its table.
type exitCase struct {
	command string // as the table names it
	code    exitcode.Code
	how     string
	exit    func(t *testing.T) int
}

// drive runs a command line through runMain.
func drive(ctx context.Context, args ...string) func(t *testing.T) int {
	return func(t *testing.T) int {
		var stdout, stderr strings.Builder
		code := runMain(ctx, args, &stdout, &stderr)
		t.Logf("lab %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		return code
	}
}

// driveIn is drive with args made in a fresh temporary folder (OUT in
// args), for commands that write.
func driveIn(ctx context.Context, args ...string) func(t *testing.T) int {
	return func(t *testing.T) int {
		out := t.TempDir()
		a := slices.Clone(args)
		for i := range a {
			a[i] = strings.ReplaceAll(a[i], "OUT", out)
		}
		return drive(ctx, a...)(t)
	}
}

// slowerCopy is driveIn with SLOWER in args standing for a copy of run
// whose uprobe-nop figures are 5 % lower in every boot, under another run
// id: a regression of the same measuring method.
func slowerCopy(ctx context.Context, run string, args ...string) func(t *testing.T) int {
	return func(t *testing.T) int {
		data, err := os.ReadFile(filepath.Join(run, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		r["run_id"] = "20990101-000000"
		for _, b := range r["boots"].([]any) {
			results, _ := b.(map[string]any)["results"].([]any)
			for _, res := range results {
				m := res.(map[string]any)
				if m["benchmark"] != "uprobe-nop" {
					continue
				}
				samples, _ := m["samples"].([]any)
				for _, sm := range samples {
					x := sm.(map[string]any)
					x["hits"] = math.Round(x["hits"].(float64) * 0.95)
					x["rate"] = x["rate"].(float64) * 0.95
				}
			}
		}
		dir := filepath.Join(t.TempDir(), "slower")
		if data, err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "results.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		a := slices.Clone(args)
		for i := range a {
			a[i] = strings.ReplaceAll(a[i], "SLOWER", dir)
		}
		return driveIn(ctx, a...)(t)
	}
}

// ends is a command that ended with err, as runMain maps it: for the
// errors only a real build or boot returns (a kernel that panicked, a
// QEMU that died), and for bisect's outcomes.
func ends(ctx context.Context, command string, err error) func(t *testing.T) int {
	return func(t *testing.T) int { return exitFor(ctx, command, err) }
}

// gated is a command ending with what its gates make of a committed run.
func gated(command, dir string, regression, claims bool) func(t *testing.T) int {
	return func(t *testing.T) int {
		r, err := loadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		var g report.GateFlags
		g.FailOnRegression.V, g.RequireClaims.V = regression, claims
		return exitFor(context.Background(), command, g.Check(report.Build(r, dir, version.Lab(""))))
	}
}

// stopped is the context of a lab a signal stopped.
func stopped(sig syscall.Signal) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stopSignal{sig})
	return ctx
}

// merged merges a committed run cut into shards, with more flags.
func merged(flags ...string) func(t *testing.T) int {
	return func(t *testing.T) int {
		_, dirs := splitExample(t, 2, []string{"h1"}, nil)
		args := append(append([]string{"merge"}, dirs...), "-o", filepath.Join(t.TempDir(), "merged"))
		return drive(context.Background(), append(args, flags...)...)(t)
	}
}

// submitWith runs lab submit slurm against an sbatch that answers, or
// fails when fail is set.
func submitWith(ctx context.Context, fail bool) func(t *testing.T) int {
	return func(t *testing.T) int {
		fakeSbatch(t)
		if fail {
			bin := t.TempDir()
			os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\necho 'sbatch: error: Invalid partition name specified' >&2\nexit 1\n"), 0o755)
			t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
		}
		return driveIn(ctx, "submit", "slurm", srcuLab, "--shards", "2", "--results", "OUT/results", "--cache", "OUT/cache")(t)
	}
}

// inHistory runs a lab history command line on the history made, OUT in
// args a fresh folder.
func inHistory(make func(t *testing.T) string, args ...string) func(t *testing.T) int {
	return func(t *testing.T) int {
		db := make(t)
		return driveIn(context.Background(), append(args, "--history", db)...)(t)
	}
}

// servedBriefly serves the examples' history on a free port for a moment,
// then stops it as Ctrl-C would.
func servedBriefly(t *testing.T) int {
	db := importedExamples(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return drive(ctx, "serve", "--history", db, "--listen", "127.0.0.1:0")(t)
}

// damagedHistory is a history file whose header is not SQLite's.
func damagedHistory(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "history.db")
	os.WriteFile(p, []byte("SQLite format 2\x00 and then nothing"), 0o644)
	return p
}

func probed(verdict string) *results.Bisect {
	return &results.Bisect{Outcome: bisect.Probed, Culprit: 1, Steps: []results.BisectStep{{Verdict: bisect.EndGood}, {Verdict: verdict}, {Verdict: bisect.EndBad}}}
}

func exitCases() []exitCase {
	bg := context.Background()
	sigint, sigterm := stopped(syscall.SIGINT), stopped(syscall.SIGTERM)
	kernel := &run.FailedBootsError{Failed: 2, Kernel: 1, Results: "results.json"}
	infra := &run.FailedBootsError{Failed: 2, Kernel: 0, Results: "results.json"}
	noQEMU := fmt.Errorf("boot 3: %w", &vm.InfraError{Reason: "start qemu-system-x86_64", Err: os.ErrNotExist})
	stop := fmt.Errorf("interrupted during boot 3: %w", context.Canceled)
	diskFull := fmt.Errorf("save results: %w", &os.PathError{Op: "write", Path: "results.json", Err: syscall.ENOSPC})
	foreign := "arm64" // an arch KVM cannot run here: no-kvm whatever the host
	if runtime.GOARCH == "arm64" {
		foreign = "x86_64"
	}
	outcome := func(o string) error { return outcomeError(&results.Bisect{Outcome: o}, false) }
	return []exitCase{
		{"run", exitcode.OK, "a run that measured", ends(bg, "run", nil)},
		{"run", exitcode.Failed, "no lab file", drive(bg, "run", noSuchLab)},
		{"run", exitcode.Failed, "a boot the kernel failed", ends(bg, "run", kernel)},
		{"run", exitcode.Usage, "no lab file given", drive(bg, "run")},
		{"run", exitcode.Usage, "a flag of lab plan", drive(bg, "run", srcuLab, "--shards", "2")},
		{"run", exitcode.Regression, "--fail-on-regression", gated("run", regressed, true, false)},
		{"run", exitcode.Claims, "--require-claims", gated("run", unclaimed, false, true)},
		{"run", exitcode.SameImage, "one image on both sides", ends(bg, "run", &run.SameImageError{Same: []string{"x86_64"}})},
		{"run", exitcode.Infra, "every failed boot QEMU's", ends(bg, "run", infra)},
		{"run", exitcode.Infra, "a full disk", ends(bg, "run", diskFull)},
		{"run", exitcode.Interrupted, "SIGINT", ends(sigint, "run", stop)},
		{"run", exitcode.Terminated, "SIGTERM", ends(sigterm, "run", stop)},

		{"build", exitcode.OK, "built", ends(bg, "build", nil)},
		{"build", exitcode.Failed, "no lab file", drive(bg, "build", noSuchLab)},
		{"build", exitcode.Usage, "--shard", drive(bg, "build", srcuLab, "--shard", "0/2")},
		{"build", exitcode.Infra, "a full disk", ends(bg, "build", diskFull)},
		{"build", exitcode.Interrupted, "SIGINT", ends(sigint, "build", stop)},
		{"build", exitcode.Terminated, "SIGTERM", ends(sigterm, "build", stop)},

		{"new", exitcode.OK, "a series kept", exitNew},
		{"new", exitcode.Failed, "no such series", drive(bg, "new", "mine", "--series", "/nonexistent/v2.mbx")},
		{"new", exitcode.Usage, "no --series", drive(bg, "new", "mine")},

		{"bisect", exitcode.Found, "a culprit", ends(bg, "bisect", outcome(bisect.Found))},
		{"bisect", exitcode.Found, "--each", ends(bg, "bisect", outcome(bisect.Attributed))},
		{"bisect", exitcode.Failed, "no lab file", drive(bg, "bisect", noSuchLab)},
		{"bisect", exitcode.Usage, "--shard, a flag of lab run only", drive(bg, "bisect", srcuLab, "--shard", "0/2")},
		{"bisect", exitcode.Usage, "--no-build", drive(bg, "bisect", srcuLab, "--no-build")},
		{"bisect", exitcode.Usage, "--only", drive(bg, "bisect", srcuLab, "--only", "patched")},
		{"bisect", exitcode.NoChange, "the ends do not differ", ends(bg, "bisect", outcome(bisect.NoChange))},
		{"bisect", exitcode.Unclear, "a range", ends(bg, "bisect", outcome(bisect.Range))},
		{"bisect", exitcode.Unclear, "a doubt", ends(bg, "bisect", outcome(bisect.Doubt))},
		{"bisect", exitcode.Infra, "QEMU did not start", ends(bg, "bisect", noQEMU)},
		{"bisect", exitcode.Interrupted, "SIGINT", ends(sigint, "bisect", stop)},
		{"bisect", exitcode.Terminated, "SIGTERM", ends(sigterm, "bisect", stop)},
		{"track", exitcode.OK, "every commit measured", ends(bg, "track", nil)},
		{"track", exitcode.Failed, "a lab on a tarball, not a git tree", drive(bg, "track", srcuLab, "--from", "v6.11", "--to", "v6.12")},
		{"track", exitcode.Usage, "no --from", drive(bg, "track", srcuLab, "--to", "v6.12")},
		{"track", exitcode.Usage, "--print without --bisect", drive(bg, "track", srcuLab, "--from", "v6.11", "--to", "v6.12", "--print")},
		{"track", exitcode.Infra, "QEMU did not start", ends(bg, "track", noQEMU)},
		{"track", exitcode.Interrupted, "SIGINT", ends(sigint, "track", stop)},
		{"track", exitcode.Terminated, "SIGTERM", ends(sigterm, "track", stop)},

		{"watch", exitcode.OK, "an empty Maildir, once", driveIn(bg, "watch", "--inbox", "testdata/watch-inbox", "--once", "--results", "OUT", srcuLab)},
		{"watch", exitcode.OK, "status", driveIn(bg, "watch", "status", "--results", "OUT")},
		{"watch", exitcode.Failed, "no such inbox", driveIn(bg, "watch", "--inbox", "testdata/no-such-inbox", "--once", "--results", "OUT", srcuLab)},
		{"watch", exitcode.Usage, "no --inbox", drive(bg, "watch", srcuLab)},
		{"watch", exitcode.Usage, "--smtp without --to", drive(bg, "watch", "--inbox", "testdata/watch-inbox", "--smtp", "127.0.0.1:25", srcuLab)},
		{"watch", exitcode.Interrupted, "SIGINT", ends(sigint, "watch", stop)},
		{"watch", exitcode.Terminated, "SIGTERM", ends(sigterm, "watch", stop)},

		{exitcode.BisectRun, exitcode.Good, "like good", ends(bg, exitcode.BisectRun, forGitBisect(outcomeError(probed(bisect.LikeGood), true)))},
		{exitcode.BisectRun, exitcode.Bad, "like bad", ends(bg, exitcode.BisectRun, forGitBisect(outcomeError(probed(bisect.LikeBad), true)))},
		{exitcode.BisectRun, exitcode.Skip, "neither end", ends(bg, exitcode.BisectRun, forGitBisect(outcomeError(probed(bisect.Neither), true)))},
		{exitcode.BisectRun, exitcode.Stop, "--shard", drive(bg, "bisect", "--run", srcuLab, "--shard", "0/2")},
		{exitcode.BisectRun, exitcode.Stop, "no lab file", drive(bg, "bisect", "--run", noSuchLab)},
		{exitcode.BisectRun, exitcode.Stop, "QEMU did not start", ends(bg, exitcode.BisectRun, forGitBisect(noQEMU))},
		{exitcode.BisectRun, exitcode.Interrupted, "SIGINT", ends(sigint, exitcode.BisectRun, forGitBisect(stop))},
		{exitcode.BisectRun, exitcode.Terminated, "SIGTERM", ends(sigterm, exitcode.BisectRun, forGitBisect(stop))},

		{"plan", exitcode.OK, "a plan", drive(bg, "plan", srcuLab, "--shards", "2")},
		{"plan", exitcode.Failed, "no lab file", drive(bg, "plan", noSuchLab, "--shards", "2")},
		{"plan", exitcode.Usage, "no --shards", drive(bg, "plan", srcuLab)},

		{"submit", exitcode.OK, "submitted", submitWith(bg, false)},
		{"submit", exitcode.Failed, "sbatch refused", submitWith(bg, true)},
		{"submit", exitcode.Usage, "no engine", drive(bg, "submit", srcuLab)},
		{"submit", exitcode.Interrupted, "SIGINT", submitWith(sigint, false)},
		{"submit", exitcode.Terminated, "SIGTERM", submitWith(sigterm, false)},

		{"merge", exitcode.OK, "merged", merged()},
		{"merge", exitcode.Failed, "not a shard", driveIn(bg, "merge", example, "-o", "OUT/m")},
		{"merge", exitcode.Usage, "no -o", drive(bg, "merge", example)},
		{"merge", exitcode.Regression, "--fail-on-regression", gated("merge", regressed, true, false)},
		{"merge", exitcode.Claims, "--require-claims", merged("--require-claims")},
		{"merge", exitcode.Infra, "a full disk", func(t *testing.T) int {
			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skip("no /dev/full here")
			}
			return merged("--junit", "/dev/full")(t)
		}},

		{"report", exitcode.OK, "reports", driveIn(bg, "report", example, "-out", "OUT")},
		{"report", exitcode.Failed, "not a run", driveIn(bg, "report", notAResult, "-out", "OUT")},
		{"report", exitcode.Usage, "two runs", drive(bg, "report", example, otherLab)},
		{"report", exitcode.Regression, "--fail-on-regression", driveIn(bg, "report", regressed, "--fail-on-regression", "-out", "OUT")},
		{"report", exitcode.Claims, "--require-claims", driveIn(bg, "report", unclaimed, "--require-claims", "-out", "OUT")},

		{"compare", exitcode.OK, "compared", driveIn(bg, "compare", otherLab, otherMethodRun, "-out", "OUT")},
		{"compare", exitcode.Failed, "not a run", driveIn(bg, "compare", example, notAResult, "-out", "OUT")},
		{"compare", exitcode.Failed, "two measuring methods", driveIn(bg, "compare", example, otherLab, "-out", "OUT")},
		{"compare", exitcode.Usage, "one run", drive(bg, "compare", example)},
		{"compare", exitcode.Usage, "--require-claims: a compare has no claims", driveIn(bg, "compare", example, otherLab, "--require-claims", "-out", "OUT")},
		{"compare", exitcode.Regression, "--fail-on-regression", slowerCopy(bg, example, "compare", example, "SLOWER", "--variant", "baseline", "--fail-on-regression", "-out", "OUT")},

		{"table", exitcode.OK, "a table", drive(bg, "table", example)},
		{"table", exitcode.Failed, "not a run", drive(bg, "table", notAResult)},
		{"table", exitcode.Usage, "no run", drive(bg, "table")},
		{"explain", exitcode.OK, "where a run moved", drive(bg, "explain", example)},
		{"explain", exitcode.Failed, "not a run", drive(bg, "explain", notAResult)},
		{"explain", exitcode.Usage, "no run", drive(bg, "explain")},
		{"export", exitcode.OK, "a copy", driveIn(bg, "export", example, "OUT/copy")},
		{"export", exitcode.Failed, "not a run", driveIn(bg, "export", notAResult, "OUT/copy")},
		{"export", exitcode.Usage, "no folder to make", drive(bg, "export", example)},

		{"benchmarks", exitcode.OK, "the list", drive(bg, "benchmarks")},
		{"benchmarks", exitcode.Usage, "an argument", drive(bg, "benchmarks", "uprobe-nop")},

		{"host", exitcode.OK, "this host", drive(bg, "host")},
		{"host", exitcode.Failed, "--kvm " + foreign, drive(bg, "host", "--kvm", foreign)},
		{"host", exitcode.Usage, "--kvm of no arch", drive(bg, "host", "--kvm", "sparc")},

		{"history", exitcode.OK, "the series of the examples", inHistory(importedExamples, "history")},
		{"history", exitcode.OK, "the examples imported", driveIn(bg, "history", "import", example, "--history", "OUT/h.db")},
		{"history", exitcode.OK, "a report", inHistory(importedExamples, "history", "report", "--out", "OUT")},
		{"history", exitcode.Failed, "a damaged history", inHistory(damagedHistory, "history")},
		{"history", exitcode.Failed, "a folder that is not a run", driveIn(bg, "history", "import", notAResult, "--history", "OUT/h.db")},
		{"history", exitcode.Usage, "no such subcommand", drive(bg, "history", "show")},
		{"history", exitcode.Usage, "--history in no folder", drive(bg, "history", "import", example, "--history", "no-such-folder/h.db")},

		{"serve", exitcode.OK, "served until stopped", servedBriefly},
		{"serve", exitcode.Failed, "no history", drive(bg, "serve", "--history", "no-such-folder/h.db")},
		{"serve", exitcode.Usage, "an argument", drive(bg, "serve", "x")},

		{exitcode.HistoryDetect, exitcode.OK, "no change point", inHistory(importedExamples, "history", "detect", "--lab", "uprobe-srcu")},
		{exitcode.HistoryDetect, exitcode.Slower, "the tracked stream's regressions", inHistory(importedExamples, "history", "detect", "--lab", "track-stream")},
		{exitcode.HistoryDetect, exitcode.Failed, "an unknown lab", inHistory(importedExamples, "history", "detect", "--lab", "nope")},
		{exitcode.HistoryDetect, exitcode.Usage, "--out", drive(bg, "history", "detect", "--out", "x")},
		{exitcode.HistoryDetect, exitcode.Slower, "a planted regression", inHistory(func(t *testing.T) string { return planted(t, -1) }, "history", "detect")},
		{exitcode.HistoryDetect, exitcode.Improved, "a planted improvement", inHistory(func(t *testing.T) string { return planted(t, 1) }, "history", "detect")},

		{"help", exitcode.OK, "the commands", drive(bg, "help")},
		{"help", exitcode.OK, "exit codes", drive(bg, "help", "exit-codes")},
		{"help", exitcode.OK, "a command's flags", drive(bg, "help", "bisect")},
		{"help", exitcode.Usage, "no such command", drive(bg, "help", "bissect")},
	}
}

// Each command exits with each code the exit-code table documents for
// it, from the inputs that should produce it: real command lines where
// they are quick, and where only a real build or boot fails so, the error
// that build or boot returns, mapped as runMain maps it.
func TestEveryCommandExitsWithEachCodeItDocuments(t *testing.T) {
	shown := map[string]map[exitcode.Code]bool{}
	for _, tc := range exitCases() {
		if _, ok := exitcode.Lookup(tc.command, tc.code); !ok {
			t.Errorf("lab %s, %s: exit %d is not in its table", tc.command, tc.how, tc.code)
		}
		if shown[tc.command] == nil {
			shown[tc.command] = map[exitcode.Code]bool{}
		}
		shown[tc.command][tc.code] = true
		t.Run(fmt.Sprintf("%s/%d/%s", tc.command, tc.code, tc.how), func(t *testing.T) {
			if got := tc.exit(t); got != int(tc.code) {
				t.Errorf("exit %d, want %d", got, tc.code)
			}
		})
	}
	for _, c := range exitcode.Commands() {
		for _, e := range exitcode.For(c) {
			if !shown[c][e.Code] {
				t.Errorf("lab %s documents exit %d (%s), and no case shows it", c, e.Code, e.Name)
			}
		}
	}
}

// The table names lab's commands as lab does.
func TestExitTableNamesTheCommands(t *testing.T) {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	names = append(names, "help", exitcode.BisectRun, exitcode.HistoryDetect)
	slices.Sort(names)
	table := slices.Sorted(slices.Values(exitcode.Commands()))
	if !slices.Equal(names, table) {
		t.Errorf("lab's commands %v, the table's %v", names, table)
	}
}

// lab help and lab alone list every command of lab's command table, each
// on a line of its own that starts "lab NAME", and every form of it.
func TestHelpListsEveryCommand(t *testing.T) {
	_, help, _ := labCmd(t, "help")
	_, _, bare := labCmd(t)
	for name, text := range map[string]string{"lab help": help, "lab": bare} {
		for _, c := range commands() {
			if len(c.forms) == 0 {
				t.Errorf("lab %s has no line in lab help", c.name)
			}
			for _, f := range c.forms {
				line := strings.TrimSpace("lab " + c.name + " " + f.args)
				if !strings.Contains(text, "\n  "+line+" ") {
					t.Errorf("%s does not list %q:\n%s", name, line, text)
				}
			}
		}
	}
}

// lab help exit-codes prints the table; each command's help ends with its
// own codes, and lab bisect's lists no flag it would ignore.
func TestHelpPrintsExitCodes(t *testing.T) {
	code, stdout, _ := labCmd(t, "help", "exit-codes")
	if code != 0 || stdout != exitcode.Help() {
		t.Errorf("lab help exit-codes: exit %d\n%s", code, stdout)
	}
	for _, tc := range []struct {
		command string
		want    []string
		not     []string
	}{
		{"run", []string{"Exit codes of lab run:", "5  infrastructure", fmt.Sprintf("exit %d when a non-control row", exitcode.Regression), "\n  -shard"}, []string{"no-change"}},
		{"report", []string{fmt.Sprintf("exit %d unless every claim", exitcode.Claims), "4  claims"}, []string{"infrastructure"}},
		{"bisect", []string{"Exit codes of lab bisect:", "3  no-change", "Exit codes of lab bisect --run:", "125  skip", "\n  -parallel", "\n  -cache"},
			[]string{"\n  -shard", "\n  -no-build", "\n  -only"}},
	} {
		code, _, stderr := labCmd(t, "help", tc.command)
		if code != 0 {
			t.Errorf("lab help %s: exit %d", tc.command, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("lab help %s lacks %q", tc.command, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(stderr, w) {
				t.Errorf("lab help %s has %q:\n%s", tc.command, w, stderr)
			}
		}
	}
}

// Signals: the code says which one stopped lab, whatever error the
// command returned on its way out.
func TestExitCodeOfASignal(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		want exitcode.Code
	}{
		{stopped(syscall.SIGINT), exitcode.Interrupted},
		{stopped(syscall.SIGTERM), exitcode.Terminated},
		{cancelled, exitcode.Interrupted},
	} {
		if got := exitCode(tc.ctx, errors.New("boot 2: context canceled")); got != tc.want {
			t.Errorf("exit %d, want %d", got, tc.want)
		}
	}
}
