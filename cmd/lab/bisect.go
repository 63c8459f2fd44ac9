package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"lab/internal/bisect"
	"lab/internal/bisectreport"
	"lab/internal/exitcode"
	"lab/internal/flagval"
	"lab/internal/initramfs"
	"lab/internal/publish"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/spec"
	"lab/internal/testbed"
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

The flags of lab run that choose what one run boots (--only, --shard,
--no-build) are not lab bisect's: it boots every step it needs, on this host,
building what it boots.

Flags:
`

// bisectFlags are lab bisect's flags: the lab overrides, the run options
// a bisect uses, and the figure, the range and the mode of the bisect.
type bisectFlags struct {
	lab                     spec.Flags
	build                   testbed.Flags
	bench, good, bad, junit flagval.String
	scaling, each, probe    flagval.Bool
	claim, maxBoots         flagval.Int
	history                 historyFlags
}

func (f *bisectFlags) RegisterFlags(fs *flag.FlagSet) {
	f.lab.RegisterFlags(fs)
	// Not lab run's --shard, --only or --no-build: a flag a bisect would
	// ignore is an unknown flag, not a silent no-op.
	f.build.RegisterFlags(fs)
	fs.Var(&f.bench, "benchmark", "the benchmark to follow, at --producers (one count)")
	fs.Var(&f.scaling, "scaling", "follow the benchmark's rate(P)/rate(1) ratio instead of its rate")
	fs.Var(&f.claim, "claim", "follow the lab's N-th claim (1-based)")
	fs.Var(&f.good, "good", "with --bad: bisect the first-parent commits of the lab's git source from this ref")
	fs.Var(&f.bad, "bad", "with --good: ... to this ref")
	fs.Var(&f.each, "each", "measure every step and share the change out patch by patch")
	fs.Var(&f.probe, "run", "judge the git source's HEAD against --good and --bad, for git bisect run (exit 0 good, 1 bad, 125 skip, 128 stop)")
	fs.Var(&f.maxBoots, "max-boots", "wall clock: the most boots of one step before it is unclear (default 16)")
	fs.Var(&f.junit, "junit", "also write JUnit XML to this file (a case per step)")
	f.history.RegisterFlags(fs)
}

// options makes the bisect's options from the command line.
func (f *bisectFlags) options(inv invocation) (bisect.Options, error) {
	if len(inv.args) != 1 {
		return bisect.Options{}, usagef("bisect takes one lab file, got %d", len(inv.args))
	}
	lab, err := spec.Load(inv.args[0])
	if err != nil {
		return bisect.Options{}, err
	}
	if len(lab.Versions) > 0 && !f.good.IsSet() {
		return bisect.Options{}, usagef("bisect follows one series, and lab %s has %d (versions:): bisect one in a lab with series: (lab run measures several)", lab.Name, len(lab.Versions))
	}
	if err := f.lab.Apply(lab); err != nil {
		return bisect.Options{}, err
	}
	root, err := initramfs.FindModuleRoot(lab.Root)
	if err != nil {
		return bisect.Options{}, err
	}
	ro, err := f.build.Apply(root, []string{lab.Root, lab.SeriesPath()})
	if err != nil {
		return bisect.Options{}, usageError{err.Error()}
	}
	opt := bisect.Options{Lab: lab, CacheDir: ro.CacheDir, ResultsDir: ro.ResultsDir, ModuleRoot: root, Accel: ro.Accel,
		Jobs: ro.Jobs, Command: append([]string{"lab"}, inv.raw...), Out: inv.out, Good: f.good.V, Bad: f.bad.V,
		Each: f.each.V, Run: f.probe.V, MaxBoots: f.maxBoots.V, Claim: f.claim.V, Sandbox: ro.Sandbox, Parallel: ro.Parallel}
	switch {
	case f.bench.IsSet() && f.claim.IsSet():
		return opt, usagef("--benchmark and --claim both name the figure: give one")
	case f.bench.IsSet():
		p := lab.Matrix.Producers
		if f.lab.Producers.IsSet() && len(p) != 1 {
			return opt, usagef("--producers: a bisect follows one figure: give one producer count")
		}
		n := 1
		if f.lab.Producers.IsSet() {
			n = p[0]
		}
		opt.Figure = &results.Figure{Benchmark: f.bench.V, Producers: n, Scaling: f.scaling.V}
	case f.scaling.IsSet():
		return opt, usagef("--scaling goes with --benchmark")
	}
	if f.claim.IsSet() && f.claim.V < 1 {
		return opt, usagef("--claim %d: claims are numbered from 1", f.claim.V)
	}
	return opt, nil
}

func bisectCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f bisectFlags
	f.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), bisectHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		err := f.bisect(ctx, inv)
		if f.probe.V {
			return forGitBisect(err)
		}
		return err
	}
}

// forGitBisect is a --run bisect's error as git bisect run must read it:
// git reads 1..127 but 125 as "bad", so whatever went wrong must stop it
// (128), not blame the commit.
func forGitBisect(err error) error {
	var ce codeError
	if err != nil && !(errors.As(err, &ce) && (ce.code == exitcode.Bad || ce.code == exitcode.Skip)) {
		return codeError{exitcode.Stop, err}
	}
	return err
}

// bisect runs the bisect, writes its reports and returns its outcome.
func (f *bisectFlags) bisect(ctx context.Context, inv invocation) error {
	opt, err := f.options(inv)
	if err != nil {
		return err
	}
	where, err := f.history.target(opt.ResultsDir)
	if err != nil {
		return err
	}
	res, dir, err := bisect.Run(ctx, opt)
	if res != nil && dir != "" {
		opt := publish.Options{ReportDir: runfolder.Folder{Dir: dir}.Report(), JUnitPath: f.junit.V, Out: inv.out, CI: true}
		if werr := emitBisect(res, opt); werr != nil && err == nil {
			err = werr
		}
		recordHistory(ctx, res, dir, where, inv.out, inv.errOut)
	}
	if err != nil {
		return err // main tells the infrastructure's failures (5) from the rest
	}
	return outcomeError(res.Bisect, f.probe.V)
}

// outcomeError is a finished bisect's outcome as an error carrying its
// exit code, nil for a culprit (or, with --run, a HEAD like the good end).
func outcomeError(bi *results.Bisect, probe bool) error {
	if probe {
		if code := bisect.RunExitCode(bi); code != exitcode.Good {
			verdict := "not judged"
			if bi != nil && len(bi.Steps) > 0 {
				verdict = bi.Steps[min(1, len(bi.Steps)-1)].Verdict
			}
			return codeError{code, fmt.Errorf("bisect --run: HEAD is %s", verdict)}
		}
		return nil
	}
	if code := bisect.ExitCode(bi.Outcome); code != exitcode.Found {
		return codeError{code, fmt.Errorf("bisect: %s", bi.Outcome)}
	}
	return nil
}

// emitBisect publishes a bisect's reports (with opt.CI, the JUnit file and
// the job summary too) and prints its plain report.
func emitBisect(r *results.Run, opt publish.Options) error {
	if r.Bisect == nil || r.Bisect.Outcome == "" {
		fmt.Fprintf(opt.Out, "bisect of %s stopped before it had an answer; what was measured is in %s\n", r.Lab, filepath.Dir(opt.ReportDir))
		return nil
	}
	o, err := bisectreport.Outputs(r)
	if err != nil {
		return err
	}
	_, err = publish.Publish(o, opt)
	return err
}
