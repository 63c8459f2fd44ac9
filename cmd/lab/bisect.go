package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"lab/internal/bisect"
	"lab/internal/flagval"
	"lab/internal/initramfs"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/spec"
	"lab/internal/vm"
)

const bisectHelp = `lab bisect LAB.yaml [flags]: which patch of the lab's series moved a figure
(or, with --good and --bad, which commit of the lab's git source).

Step k is the source with the first k patches of the series (apply mode: git
am; revert mode: the last n-k patches reverse-applied); step 0 is lab run's
baseline and step n its patched kernel. The figure is --benchmark at
--producers (--scaling: its rate(P)/rate(1) ratio), or --claim N, or the row
that changed most between the ends. The ends are measured first: when they do
not differ, lab stops. Steps that do not build or boot are skipped.

With --run, lab judges one commit for git bisect run: the HEAD of the lab's
git source (where git bisect stands) against --good and --bad, following
--benchmark or --claim; under icount the ends are measured once and cached
for every later step:

  cd ~/linux && git bisect start BAD GOOD
  git bisect run lab bisect --run --good GOOD --bad BAD --benchmark uprobe-nop LAB.yaml

Exit codes (--run: 0 like good, 1 like bad, 125 skip: it does not build or
boot, or it stayed unclear; 128 stops git bisect: the ends do not differ, or
lab failed, whatever the reason):
  0  culprit found (with --each: the change shared out patch by patch)
  1  lab failed (a bad lab file, a series that does not apply)
  2  usage: the command line is wrong
  3  the ends do not differ: nothing to bisect
  4  unclear: a range of suspects, an unclear step, or a figure that is not monotonic
  5  infrastructure failure (QEMU could not start, the disk is full)
  130  interrupted by SIGINT (143: SIGTERM)

Flags:
`

func bisectCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var labFlags spec.Flags
	var runFlags run.Flags
	var bench, good, bad, junit flagval.String
	var scaling, each, probe flagval.Bool
	var claim, maxBoots flagval.Int
	labFlags.RegisterFlags(fs)
	runFlags.RegisterFlags(fs)
	fs.Var(&bench, "benchmark", "the benchmark to follow, at --producers (one count)")
	fs.Var(&scaling, "scaling", "follow the benchmark's rate(P)/rate(1) ratio instead of its rate")
	fs.Var(&claim, "claim", "follow the lab's N-th claim (1-based)")
	fs.Var(&good, "good", "with --bad: bisect the first-parent commits of the lab's git source from this ref")
	fs.Var(&bad, "bad", "with --good: ... to this ref")
	fs.Var(&each, "each", "measure every step and share the change out patch by patch")
	fs.Var(&probe, "run", "judge the git source's HEAD against --good and --bad, for git bisect run (exit 0 good, 1 bad, 125 skip, 128 stop)")
	fs.Var(&maxBoots, "max-boots", "wall clock: the most boots of one step before it is unclear (default 16)")
	fs.Var(&junit, "junit", "also write JUnit XML to this file (a case per step)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), bisectHelp)
		fs.PrintDefaults()
	}
	bisectMain := func(ctx context.Context, inv invocation) error {
		if len(inv.args) != 1 {
			return usagef("bisect takes one lab file, got %d", len(inv.args))
		}
		if runFlags.Only.IsSet() {
			return usagef("--only: a bisect boots every step it needs")
		}
		lab, err := spec.Load(inv.args[0])
		if err != nil {
			return err
		}
		if err := labFlags.Apply(lab); err != nil {
			return err
		}
		root, err := initramfs.FindModuleRoot(lab.Root)
		if err != nil {
			return err
		}
		ro := run.Options{Lab: lab}
		if err := runFlags.Apply(&ro, root); err != nil {
			return usageError{err.Error()}
		}
		opt := bisect.Options{Lab: lab, CacheDir: ro.CacheDir, ResultsDir: ro.ResultsDir, ModuleRoot: root, Accel: ro.Accel,
			Jobs: ro.Jobs, Command: append([]string{"lab"}, inv.raw...), Out: inv.out, Good: good.V, Bad: bad.V,
			Each: each.V, Run: probe.V, MaxBoots: maxBoots.V, Claim: claim.V, Sandbox: ro.Sandbox}
		switch {
		case bench.IsSet() && claim.IsSet():
			return usagef("--benchmark and --claim both name the figure: give one")
		case bench.IsSet():
			p := lab.Matrix.Producers
			if labFlags.Producers.IsSet() && len(p) != 1 {
				return usagef("--producers: a bisect follows one figure: give one producer count")
			}
			n := 1
			if labFlags.Producers.IsSet() {
				n = p[0]
			}
			opt.Figure = &results.Figure{Benchmark: bench.V, Producers: n, Scaling: scaling.V}
		case scaling.IsSet():
			return usagef("--scaling goes with --benchmark")
		}
		if claim.IsSet() && claim.V < 1 {
			return usagef("--claim %d: claims are numbered from 1", claim.V)
		}
		res, dir, err := bisect.Run(ctx, opt)
		if res != nil && dir != "" {
			if werr := emitBisect(res, dir, filepath.Join(dir, "report"), inv.out); werr != nil && err == nil {
				err = werr
			}
			if res.Bisect != nil && res.Bisect.Outcome != "" {
				if cerr := writeBisectCI(res, junit.V); cerr != nil && err == nil {
					err = cerr
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			var ie *vm.InfraError
			if errors.As(err, &ie) {
				return codeError{bisect.ExitInfra, err}
			}
			return err
		}
		if probe.V {
			if code := bisect.RunExitCode(res.Bisect); code != bisect.RunGood {
				return codeError{code, fmt.Errorf("bisect --run: HEAD is %s", res.Bisect.Steps[min(1, len(res.Bisect.Steps)-1)].Verdict)}
			}
			return nil
		}
		if code := bisect.ExitCode(res.Bisect.Outcome); code != 0 {
			return codeError{code, fmt.Errorf("bisect: %s", res.Bisect.Outcome)}
		}
		return nil
	}
	return func(ctx context.Context, inv invocation) error {
		err := bisectMain(ctx, inv)
		if !probe.V {
			return err
		}
		// git bisect run reads 1..127 but 125 as "bad": whatever went
		// wrong must stop it, not blame the commit.
		var ce codeError
		if err != nil && !(errors.As(err, &ce) && (ce.code == bisect.RunBad || ce.code == bisect.RunSkip)) {
			return codeError{bisect.RunAbort, err}
		}
		return err
	}
}

// emitBisect writes a bisect's reports and prints its plain report.
func emitBisect(r *results.Run, dir, out string, w io.Writer) error {
	if out == "" {
		out = filepath.Join(dir, "report")
	}
	if r.Bisect == nil || r.Bisect.Outcome == "" {
		fmt.Fprintf(w, "bisect of %s stopped before it had an answer; what was measured is in %s\n", r.Lab, dir)
		return nil
	}
	files, err := bisect.Files(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var paths []string
	for name, data := range files {
		p := filepath.Join(out, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		paths = append(paths, p)
	}
	fmt.Fprint(w, "\n"+string(files["report-80.txt"]))
	fmt.Fprintf(w, "reports: %s\n", strings.Join(sorted(paths), " "))
	return nil
}

func writeBisectCI(r *results.Run, junitPath string) error {
	files, err := bisect.Files(r)
	if err != nil {
		return err
	}
	if junitPath != "" {
		if err := os.WriteFile(junitPath, files["junit.xml"], 0o644); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	return appendSummary(string(files["report.md"]))
}
