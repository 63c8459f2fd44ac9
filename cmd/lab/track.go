package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lab/internal/bisect"
	"lab/internal/flagval"
	"lab/internal/gitcmd"
	"lab/internal/history"
	"lab/internal/initramfs"
	"lab/internal/publish"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/shard"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/track"
)

const trackHelp = `lab track LAB.yaml --from REF --to REF [flags]: measure a branch into the history

The lab's source must be a git tree (source: git:). Each first-parent commit
after --from up to --to (or, with --every K, each whose place along the
branch is a multiple of K, and --to) is built from the content cache, as
an incremental build of the one before, and booted once per shape under
icount (the lab's boots per shape under the wall clock), side by side
while the next commit builds. A commit whose kernel image is its parent's
(documentation, comments) is not booted. Commits the history has already
(this lab, shape and host) are skipped, so a track that stopped resumes;
--shard K/N measures the K-th of N contiguous blocks of the commits.

Every boot goes into the history with its commit and place along the
branch, and into a run folder (results.json) for provenance.

With --bisect, lab then looks for change points in the lab's series of
this shape and, for each, names the culprit: the first commit after the
change point when it follows the last one before directly, else what lab
bisect --good BEFORE --bad AFTER finds (its kernels come from the cache);
the culprit is written into the history. --print prints those lab bisect
commands instead of running them.

Flags:
`

// trackFlags are lab track's flags: the lab overrides, the run options a
// track uses, the range and what to do with change points.
type trackFlags struct {
	lab           spec.Flags
	build         testbed.Flags
	shard         flagval.String
	from, to      flagval.String
	every         flagval.Int
	bisect, print flagval.Bool
	minPct        flagval.Float
	history       historyFlags
}

// trackOnly are the flags that are lab track's alone: a printed lab
// bisect command leaves them out.
var trackOnly = []string{"from", "to", "every", "bisect", "print", "shard", "min-pct", "arch", "cpus"}

func (f *trackFlags) RegisterFlags(fs *flag.FlagSet) {
	f.lab.RegisterFlags(fs)
	f.build.RegisterFlags(fs)
	fs.Var(&f.shard, "shard", "K/N: measure only the K-th of N contiguous blocks of the commits (0 <= K < N)")
	fs.Var(&f.from, "from", "measure the first-parent commits after this ref of the lab's git source ...")
	fs.Var(&f.to, "to", "... up to and including this ref")
	fs.Var(&f.every, "every", "measure every K-th commit by its place along the branch (and --to); default every commit")
	fs.Var(&f.bisect, "bisect", "then name the culprit of each change point of the lab's series in this shape, bisecting where commits were left out, and write it into the history")
	fs.Var(&f.print, "print", "with --bisect: print the lab bisect commands instead of running them")
	fs.Var(&f.minPct, "min-pct", "with --bisect: the least change of a level, in percent, that is a change point (default: each clock's)")
	f.history.RegisterFlags(fs)
}

func trackCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f trackFlags
	f.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), trackHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error { return f.track(ctx, fs, inv) }
}

func (f *trackFlags) track(ctx context.Context, fs *flag.FlagSet, inv invocation) error {
	if len(inv.args) != 1 {
		return usagef("track takes one lab file, got %d", len(inv.args))
	}
	switch {
	case !f.from.IsSet() || !f.to.IsSet():
		return usagef("track needs --from and --to: the commits after --from up to --to are measured")
	case f.every.IsSet() && f.every.V < 1:
		return usagef("--every %d: want 1 or more", f.every.V)
	case f.print.V && !f.bisect.V:
		return usagef("--print goes with --bisect")
	case f.minPct.IsSet() && !f.bisect.V:
		return usagef("--min-pct goes with --bisect")
	case f.bisect.V && f.shard.IsSet():
		return usagef("--bisect with --shard: a shard sees part of the branch; bisect after the shards, with lab track --bisect on the whole range")
	case f.bisect.V && f.history.off.V:
		return usagef("--bisect reads the change points from the history: not with --no-history")
	}
	lab, err := spec.Load(inv.args[0])
	if err != nil {
		return err
	}
	if err := f.lab.Apply(lab); err != nil {
		return err
	}
	root, err := initramfs.FindModuleRoot(lab.Root)
	if err != nil {
		return err
	}
	ro, err := f.build.Apply(root, []string{lab.Root, lab.SeriesPath()})
	if err != nil {
		return usageError{err.Error()}
	}
	var sh shard.Shard
	if f.shard.IsSet() {
		if sh, err = shard.Parse(f.shard.V); err != nil {
			return usageError{"--shard: " + err.Error()}
		}
	}
	where, err := f.history.target(ro.ResultsDir)
	if err != nil {
		return err
	}
	if where == filepath.Join(ro.ResultsDir, HistoryFile) {
		// The default history is asked before the track makes its
		// folder: the results folder must be there.
		if err := os.MkdirAll(ro.ResultsDir, 0o755); err != nil {
			return err
		}
	}
	opt := track.Options{Lab: lab, From: f.from.V, To: f.to.V, Every: f.every.V, Shard: sh, History: where,
		CacheDir: ro.CacheDir, ResultsDir: ro.ResultsDir, ModuleRoot: root, Accel: ro.Accel, Jobs: ro.Jobs,
		Parallel: ro.Parallel, Sandbox: ro.Sandbox, Command: append([]string{"lab"}, inv.raw...), Out: inv.out}
	start := time.Now()
	res, err := track.Run(ctx, opt)
	if res != nil {
		printTrack(inv.out, res, time.Since(start))
		if where != "" {
			fmt.Fprintf(inv.out, "history: %s: %s\n", storeName(where), addedText(res.Added, len(res.Run.Boots)))
		}
	}
	if err != nil || !f.bisect.V {
		return err
	}
	minPct := -1.0
	if f.minPct.IsSet() {
		minPct = f.minPct.V
	}
	var extra []string
	fs.Visit(func(fl *flag.Flag) {
		if !slices.Contains(trackOnly, fl.Name) {
			extra = append(extra, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	b := trackBisect{lab: lab, labFile: inv.args[0], ro: ro, root: root, where: where, inv: inv, extra: extra}
	return b.culprits(ctx, res, minPct, f.print.V)
}

// printTrack says what the track did with each commit, and how fast.
func printTrack(out io.Writer, res *track.Result, took time.Duration) {
	fmt.Fprintf(out, "track %s: %s\n", res.Run.RunID, res.Run.Bisect.Range)
	count := map[string]int{}
	for _, o := range res.Outcomes {
		count[o.State]++
		if o.State == track.OtherShard {
			continue
		}
		what := o.State
		switch {
		case o.SameAs != "":
			what += " (the image of " + gitcmd.Short(o.SameAs) + ")"
		case o.Why != "":
			what += ": " + o.Why
		}
		fmt.Fprintf(out, "  %6d  %s  %-40.40s  %s\n", o.Seq, gitcmd.Short(o.Hash), o.Subject, what)
	}
	var parts []string
	for _, s := range []string{track.Measured, track.NoCode, track.InHistory, track.NoBuild, track.BootFailed, track.NotReached, track.OtherShard} {
		if count[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
		}
	}
	done := count[track.Measured] + count[track.NoCode] + count[track.NoBuild] + count[track.BootFailed]
	rate := ""
	if h := took.Hours(); h > 0 && done > 0 {
		rate = fmt.Sprintf("; %.0f commits an hour", float64(done)/h)
	}
	fmt.Fprintf(out, "%s in %s%s; %s\n", strings.Join(parts, ", "), took.Round(time.Second), rate, runfolder.Folder{Dir: res.Dir}.Results())
}

// trackBisect turns the change points of a tracked lab into culprits.
type trackBisect struct {
	lab     *spec.Lab
	labFile string
	ro      testbed.Settings
	root    string
	where   string
	inv     invocation
	extra   []string // the flags given to track that a bisect takes too
}

func (b trackBisect) culprits(ctx context.Context, res *track.Result, minPct float64, print bool) error {
	store, err := history.Open(ctx, b.where)
	if err != nil {
		return err
	}
	defer store.Close()
	h, sus, err := track.Suspected(ctx, store, b.lab.Name, res, minPct)
	if err != nil {
		return err
	}
	if len(sus) == 0 {
		fmt.Fprintf(b.inv.out, "no change point in %s's lines of this shape\n", b.lab.Name)
		return nil
	}
	if print {
		for _, s := range sus {
			if s.Adjacent() {
				fmt.Fprintf(b.inv.out, "# %s %+.3f %%: %s follows %s: it is the culprit\n", s.Figure, s.Pct, gitcmd.Short(s.Bad.Hash), gitcmd.Short(s.Good.Hash))
				continue
			}
			fmt.Fprintln(b.inv.out, track.Command(b.labFile, s, append(b.shapeFlags(s), b.extra...)))
		}
		return nil
	}
	// A bisect takes the history's boots of its ends (icount).
	ends := map[[2]string]*bisect.Ends{}
	for _, s := range sus {
		ends[[2]string{s.Good.Hash, s.Bad.Hash}] = track.EndObs(h, s)
	}
	do := func(ctx context.Context, good, bad string, fig results.Figure) (string, string, string, error) {
		return b.bisect(ctx, good, bad, fig, ends[[2]string{good, bad}])
	}
	culprits, err := track.Resolve(ctx, store, b.lab.Name, sus, do, func(format string, args ...any) {
		fmt.Fprintf(b.inv.out, format+"\n", args...)
	})
	for _, c := range culprits {
		fmt.Fprintf(b.inv.out, "culprit %s (%s) of %s..%s in %s\n", gitcmd.Short(c.Culprit), c.Outcome, gitcmd.Short(c.Good), gitcmd.Short(c.Bad), c.Line)
	}
	return err
}

// shapeFlags choose the suspect's shape for lab bisect, which bisects on
// the lab's first.
func (b trackBisect) shapeFlags(s track.Suspect) []string {
	k := s.Series[0]
	return []string{fmt.Sprintf("--arch=%s", k.Arch), fmt.Sprintf("--cpus=%d", k.CPUs)}
}

// bisect runs lab bisect on good..bad in the suspect's lab, starting from
// the ends' boots the history has, and adds its boots to the history; its
// kernels come from the content cache.
func (b trackBisect) bisect(ctx context.Context, good, bad string, fig results.Figure, ends *bisect.Ends) (string, string, string, error) {
	opt := bisect.Options{Lab: b.lab, CacheDir: b.ro.CacheDir, ResultsDir: b.ro.ResultsDir, ModuleRoot: b.root, Accel: b.ro.Accel,
		Jobs: b.ro.Jobs, Command: []string{"lab", "bisect", b.labFile, "--good", good, "--bad", bad, "--benchmark", fig.Benchmark},
		Out: b.inv.out, Figure: &fig, Good: good, Bad: bad, Sandbox: b.ro.Sandbox, Parallel: b.ro.Parallel, Ends: ends}
	r, dir, err := bisect.Run(ctx, opt)
	if r != nil && dir != "" {
		popt := publish.Options{ReportDir: runfolder.Folder{Dir: dir}.Report(), Out: b.inv.out}
		if werr := emitBisect(r, popt); werr != nil && err == nil {
			err = werr
		}
		recordHistory(ctx, r, dir, b.where, b.inv.out, b.inv.errOut)
	}
	if err != nil {
		return "", "", "", err
	}
	return r.Bisect.Outcome, r.Bisect.CulpritCommit(), r.RunID, nil
}
