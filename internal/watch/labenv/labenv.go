// Package labenv is lab watch's Env: each version of a posting opened as
// lab run --series opens an mbox, measured by lab run's own path (one
// interleaved run, a kernel per version against one baseline, on the
// shared core), and the run rendered for the reply in the report's
// 80-column form for mailing lists. What went wrong is told apart as the
// reply's kinds want it: a series that does not apply, one that changes
// no code, a kernel that does not build or boot, and the infrastructure.
package labenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"lab/internal/bisect"
	"lab/internal/bisectreport"
	"lab/internal/history"
	"lab/internal/kbuild"
	"lab/internal/publicpath"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/verdict"
	"lab/internal/watch"
)

// Env runs postings with lab run.
type Env struct {
	// Settings are the build-and-boot flags lab watch was given; a
	// series from a list is someone else's code, which --sandbox auto
	// builds in the sandbox.
	Settings   testbed.Settings
	ModuleRoot string
	LabVersion string
	Command    []string // lab watch's command line
	Out        io.Writer
	// History takes every boot measured, as lab run's do; nil for none.
	History *history.Store
	// Bisect is lab bisect's run (bisect.Run when nil), which says which
	// patch of a series made it slower.
	Bisect func(context.Context, bisect.Options) (*results.Run, string, error)
}

// Run measures the job's versions in one run of its lab.
func (e *Env) Run(ctx context.Context, job watch.Job) (*watch.Result, error) {
	dir, err := os.MkdirTemp("", "lab-watch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	public := e.publicPaths(dir, job.Lab)
	var named []run.NamedSeries
	for _, v := range job.Versions {
		mbx := filepath.Join(dir, v.Name+".mbx")
		if err := os.WriteFile(mbx, v.Mbox, 0o644); err != nil {
			return nil, err
		}
		s, err := series.Open(mbx, nil, filepath.Join(dir, v.Name))
		if err != nil {
			out := &watch.Result{Kind: watch.NotApplied, Summary: fmt.Sprintf("%s could not be read as a series: %v", v.Posting.Name(), err)}
			out.Public(public)
			return out, nil
		}
		defer s.Close()
		named = append(named, run.NamedSeries{Variant: variant.Variant(v.Name), Series: s})
	}
	lab := *job.Lab
	// A series from a list is new to the lab's source, or (a version the
	// source already carries) in it: mode auto tells which.
	lab.Mode = spec.ModeAuto
	opt := run.Options{
		Lab: &lab, CacheDir: e.Settings.CacheDir, ResultsDir: e.Settings.ResultsDir, ModuleRoot: e.ModuleRoot, Accel: e.Settings.Accel,
		Jobs: e.Settings.Jobs, Parallel: e.Settings.Parallel, Sandbox: e.Settings.Sandbox,
		Command: e.Command, Out: e.Out, Series: named, SaveLab: true,
		LabHeader: "lab watch ran " + job.Versions[len(job.Versions)-1].Posting.Name() + " on this lab",
	}
	if len(job.Versions) > 1 {
		if out := e.sameAsEarlier(ctx, opt, job); out != nil {
			out.Public(public)
			return out, ctx.Err()
		}
	}
	res, runDir, err := run.Run(ctx, opt)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out := &watch.Result{Kind: watch.Verdict, RunDir: runDir}
	defer out.Public(public)
	if res != nil {
		d := describe(out, res, runDir, e.LabVersion)
		if err := record(ctx, e.History, res); err != nil {
			fmt.Fprintf(e.Out, "lab: warning: the history did not take run %s: %v (lab history import %s adds it later)\n", res.RunID, err, runDir)
		}
		if err == nil && d != nil {
			newest := job.Versions[len(job.Versions)-1]
			noisy(d, newest.Name, out)
			e.attribute(ctx, lab, newest, filepath.Join(dir, newest.Name+".mbx"), d, res, out)
		}
	}
	if err != nil {
		out.Kind, out.Summary = kindOf(err), explain(err)
		if out.Kind == watch.Verdict {
			out.Kind = watch.Infra
		}
	}
	return out, nil
}

// attribute says which patch made the newest version slower: when a row
// of it against the baseline is significantly slower and it has more than
// one patch, lab bisect --each measures each patch's step and shares the
// change out, and its report goes into the reply.
func (e *Env) attribute(ctx context.Context, lab spec.Lab, newest watch.Version, mbox string, d *report.Document, measured *results.Run, out *watch.Result) {
	slower := slowerRows(d, newest.Name)
	if len(slower) == 0 || newest.Posting.Total < 2 {
		return
	}
	lab.Series, lab.Versions = mbox, nil
	bisectRun := e.Bisect
	if bisectRun == nil {
		bisectRun = bisect.Run
	}
	fmt.Fprintf(e.Out, "watch: %s is slower (%s): lab bisect --each says which patch\n", newest.Posting.Name(), strings.Join(slower, "; "))
	r, _, err := bisectRun(ctx, bisect.Options{Lab: &lab, CacheDir: e.Settings.CacheDir, ResultsDir: e.Settings.ResultsDir,
		ModuleRoot: e.ModuleRoot, Accel: e.Settings.Accel, Jobs: e.Settings.Jobs, Parallel: e.Settings.Parallel,
		Sandbox: e.Settings.Sandbox, Command: e.Command, Out: e.Out, Each: true, Measured: measured})
	out.Summary += "\n\nWhich patch made it slower (lab bisect --each, every patch's step measured):\n\n"
	switch {
	case r != nil && r.Bisect != nil:
		// Its reproduce line would run lab watch's command line; the
		// reply's own fetches the series from the list.
		pub := *r
		pub.Command, pub.Repeat, pub.LabVersion = nil, nil, ""
		out.Summary += bisectreport.Plain(&pub)
	case err != nil:
		out.Summary += "the bisect could not be done: " + err.Error() + "\n"
	}
}

// sameAsEarlier builds a job's kernels, booting nothing, and answers a
// newest version whose kernel is the image of the version before it on
// every arch: no code change against it, and nothing to boot (that
// version's reply has the figures). A job that does not build is answered
// here too, as the run would be. nil: the versions differ, measure them.
func (e *Env) sameAsEarlier(ctx context.Context, opt run.Options, job watch.Job) *watch.Result {
	opt.BuildOnly, opt.SaveLab = true, false
	res, dir, err := run.Run(ctx, opt)
	if dir != "" {
		defer os.RemoveAll(dir) // a build record, not a run
	}
	if ctx.Err() != nil {
		return &watch.Result{Kind: watch.Infra, Summary: ctx.Err().Error()}
	}
	if err != nil {
		return &watch.Result{Kind: kindOf(err), Summary: explain(err)}
	}
	newest, prev := job.Versions[len(job.Versions)-1], job.Versions[len(job.Versions)-2]
	var images []string
	for _, k := range res.Kernels {
		if k.Variant != variant.Variant(newest.Name) {
			continue
		}
		for _, p := range res.Kernels {
			if p.Arch == k.Arch && p.Variant == variant.Variant(prev.Name) && p.Info.ImageSHA256 != k.Info.ImageSHA256 {
				return nil
			}
		}
		images = append(images, fmt.Sprintf("%s sha256 %s", k.Arch, k.Info.ImageSHA256))
	}
	if len(images) == 0 {
		return nil
	}
	out := &watch.Result{Kind: watch.SameImage, Summary: fmt.Sprintf("No code change against %s: %s builds into %s's kernel image (%s). Nothing was booted: %s's figures, in lab's reply to %s, stand for it.",
		prev.Name, newest.Name, prev.Name, strings.Join(images, "; "), prev.Name, prev.Posting.Name())}
	describe(out, res, dir, e.LabVersion)
	out.RunID, out.Results = "", nil
	return out
}

// slowerRows are the rows of kernel against the baseline that are
// significantly slower (controls left out).
func slowerRows(d *report.Document, kernel string) []string {
	return verdict.Regressions(againstBaseline(d, kernel))
}

// againstBaseline are the tables of kernel against the run's baseline.
func againstBaseline(d *report.Document, kernel string) []verdict.Table {
	for _, c := range d.Comparisons {
		if string(c.Patched) == kernel && c.Against == d.Kernels[0] {
			return c.Tables
		}
	}
	return nil
}

// noisy makes a run whose newest kernel moved no row against the baseline
// while a control drifted (wall clock) a too-noisy reply: the host's own
// drift could hide a change as large as the control's, so "no change" is
// not a verdict to mail. The report follows as measured.
func noisy(d *report.Document, kernel string, out *watch.Result) {
	drift := verdict.TooNoisy(againstBaseline(d, kernel))
	if len(drift) == 0 {
		return
	}
	out.Kind = watch.Noisy
	out.Summary = "No benchmark moved significantly, but the controls, which no series should move, did:\n\n    " +
		strings.Join(drift, "\n    ") + "\n\nA change of that size cannot be told from the host's own drift. On a quieter host, or at\n1 vCPU under icount (--measure icount), the run can say more.\n\n" + out.Summary
}

// publicPaths are the folders of this machine a reply might name (the
// watch's own folder, the results, the cache, lab's checkout, the lab's
// source, the paths on lab watch's command line, the home folder), each
// with what a reader is told instead.
func (e *Env) publicPaths(dir string, lab *spec.Lab) *strings.Replacer {
	var n publicpath.Names
	n.Folder(dir, ".")
	n.Folder(e.Settings.ResultsDir, "results")
	n.Folder(e.Settings.CacheDir, "$LAB_CACHE")
	n.Folder(e.ModuleRoot, ".")
	n.Whole(lab.Source.Tarball, filepath.Base(lab.Source.Tarball))
	n.Whole(lab.Source.Git, filepath.Base(lab.Source.Git))
	n.Folder(filepath.Dir(lab.Path), "labs")
	// lab watch's own command line names its inbox, history and Maildir.
	for _, arg := range e.Command {
		if _, path, ok := strings.Cut(arg, "="); ok && filepath.IsAbs(path) {
			arg = path
		}
		if filepath.IsAbs(arg) && filepath.Dir(arg) != "/" {
			n.Whole(arg, filepath.Base(arg))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		n.Folder(home, "~")
	}
	n.Folder(os.TempDir(), "$TMPDIR")
	return n.Replacer()
}

// describe fills what a finished (or partly finished) run says, and
// gives its report (nil when nothing was booted). The report's own
// reproduce line, which runs the run folder's lab file, is left to the
// reply's, which fetches the series from the list.
func describe(out *watch.Result, res *results.Run, runDir, labVersion string) *report.Document {
	var d *report.Document
	out.RunID, out.Boots = res.RunID, len(res.Boots)
	if len(res.Boots) > 0 {
		d = report.Build(res, runDir, labVersion)
		pub := *d
		pub.Runs = nil
		for _, r := range d.Runs {
			r.Reproducer = ""
			pub.Runs = append(pub.Runs, r)
		}
		out.Summary = report.Plain(&pub)
	}
	var bases []string
	for _, s := range res.Series {
		if s.Base != "" {
			bases = append(bases, s.Base)
		}
	}
	out.Base = res.Source.Desc
	if len(bases) > 0 {
		out.Base += "; " + bases[len(bases)-1]
	}
	accel := ""
	if len(res.Boots) > 0 {
		accel = ", " + res.Boots[0].Accel.Name + " (" + res.Boots[0].Accel.Reason + ")"
	}
	out.Machine = fmt.Sprintf("%s, %d CPUs%s", res.Host.CPUModel, res.Host.CPUs, accel)
	out.Results, _ = os.ReadFile(filepath.Join(runDir, runfolder.ResultsFile))
	return d
}

// record adds the run's boots to the history (none when store is nil).
func record(ctx context.Context, store *history.Store, res *results.Run) error {
	if store == nil || len(res.Boots) == 0 {
		return nil
	}
	h, err := history.FromRun(res)
	if err != nil {
		return err
	}
	_, err = store.Add(context.WithoutCancel(ctx), h)
	return err
}

// kindOf is the reply's kind for a run that failed.
func kindOf(err error) watch.Kind {
	var apply *series.ApplyError
	var neither *source.NeitherWayError
	var same *run.SameImageError
	var build *kbuild.BuildError
	var boots *run.FailedBootsError
	switch {
	case errors.As(err, &apply), errors.As(err, &neither):
		return watch.NotApplied
	case errors.As(err, &same):
		return watch.SameImage
	case errors.As(err, &build):
		return watch.BuildFailed
	case errors.As(err, &boots) && !boots.Infrastructure():
		return watch.BootFailed
	}
	return watch.Infra
}

// explain is the reply's text for a failed run: the error, which names
// the patch (by its number and subject), file and hunk, the compiler's
// line, or the failed boots.
func explain(err error) string {
	var build *kbuild.BuildError
	var apply *series.ApplyError
	var neither *source.NeitherWayError
	switch {
	case errors.As(err, &neither) && errors.As(err, &apply):
		return "The series applies neither on the lab's source nor in reverse (as a series the source already carries):\n\n" + apply.Public()
	case errors.As(err, &apply):
		return apply.Public()
	}
	if errors.As(err, &build) {
		if _, line := build.CompilerError(); line != "" {
			return "The kernel did not compile:\n\n    " + line + "\n\n" + err.Error()
		}
	}
	return err.Error()
}
