// Command lab tells whether a kernel patch series makes the kernel faster:
// it builds the kernel with and without the series, boots both in QEMU, runs
// probe benchmarks in the guest and prints baseline against patched.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"lab/internal/benchmark"
	"lab/internal/exitcode"
	"lab/internal/flagval"
	"lab/internal/publish"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/runfolder"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
	"lab/internal/version"
	"lab/internal/vm"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal stops the work: the running guest and build are
		// stopped and what was measured is saved. A second one does not
		// wait for that.
		s := (<-sigs).(syscall.Signal)
		fmt.Fprintf(os.Stderr, "\nlab: %s: stopping (again to quit at once)\n", s)
		cancel(stopSignal{s})
		<-sigs
		os.Exit(int(exitcode.Signalled(s)))
	}()
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// stopSignal is why lab's context was cancelled: the signal that stopped
// it, whose number the exit code carries.
type stopSignal struct{ sig syscall.Signal }

func (s stopSignal) Error() string { return s.sig.String() }

// command is one subcommand: its flags are registered on fs, then it runs.
// Its forms are its lines in lab help.
type command struct {
	name  string
	forms []form
	flags func(fs *flag.FlagSet) func(ctx context.Context, inv invocation) error
}

// form is one way to call a command: its arguments and what it does, a
// line of lab help.
type form struct{ args, what string }

// usage is lab help: every form of every command of cmds, in their order,
// then help's own.
func usage(cmds []command) string {
	var lines [][2]string
	for _, c := range cmds {
		for _, f := range c.forms {
			lines = append(lines, [2]string{strings.TrimSpace("lab " + c.name + " " + f.args), f.what})
		}
	}
	lines = append(lines, [2]string{"lab help COMMAND", "a command's flags and exit codes"},
		[2]string{"lab help exit-codes", "every exit code of every command"})
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, l[0], l[1])
	}
	return b.String()
}

// invocation is one command line: the positional arguments after the flags
// are parsed, the whole line as typed (a run records it as its
// reproducer), where input comes from (lab run --series -) and where
// output goes.
type invocation struct {
	args   []string
	raw    []string
	stdin  io.Reader
	out    io.Writer
	errOut io.Writer // warnings that do not stop the command
}

func commands() []command {
	return []command{
		{"run", []form{{"LAB.yaml [flags]", "build, boot and measure baseline against patched"},
			{"--series PATH", "the same for a series (an mbox, a folder, a patch, - for stdin), no lab file needed"}}, runCommand},
		{"new", []form{{"NAME --series PATH", "keep a series as labs/NAME.yaml and patches/NAME/"}}, newCommand},
		{"bisect", []form{{"LAB.yaml [flags]", "which patch of the series (or commit of --good..--bad) moved a figure"}}, bisectCommand},
		{"track", []form{{"LAB.yaml [flags]", "measure each commit --from..--to of a git source into the history (--bisect: culprits)"}}, trackCommand},
		{"watch", []form{{"LAB.yaml... --inbox DIR", "run the series posted to a public-inbox list, and reply (status: the queue)"}}, watchCommand},
		{"build", []form{{"LAB.yaml [flags]", "build every kernel and initramfs of a run into the cache, boot nothing"}}, buildCommand},
		{"plan", []form{{"LAB.yaml --shards N", "the units of a run spread over N hosts: --json, or --emit github|k8s|slurm"}}, planCommand},
		{"submit", []form{{"slurm LAB.yaml", "submit a build, a boot array (--shards N) and the merge to Slurm"}}, submitCommand},
		{"merge", []form{{"RUN-DIR... -o DIR", "make one run of the shards of a run (lab run --shard K/N)"}}, mergeCommand},
		{"report", []form{{"RUN-DIR [flags]", "regenerate every report of a saved run from its results.json"}}, reportCommand},
		{"compare", []form{{"RUN-A RUN-B", "one variant of run A against the same variant of run B"}}, compareCommand},
		{"table", []form{{"RUN-DIR", "print the report of a saved run again"}}, tableCommand},
		{"explain", []form{{"RUN-DIR", "where in the kernel a saved run's moved rows changed (its instruction or sampled profile)"}}, explainCommand},
		{"export", []form{{"RUN-DIR DIR", "a copy of a saved run to publish or commit, no folder of this machine named"}}, exportCommand},
		{"benchmarks", []form{{"", "the guest benchmarks lab can run"}}, benchmarksCommand},
		{"host", []form{{"[--kvm ARCH]", "the accelerator each arch's guests get here, and why"}}, hostCommand},
		{"history", []form{{"", "the series of every boot measured, across runs"},
			{"detect|report", "where figures moved (exit 3: slower); reports, mails"},
			{"import RUN-DIR...", "add saved runs to the history"}}, historyCommand},
		{"serve", []form{{"[--listen HOST:PORT]", "the history, the runs and the watch queue as web pages"}}, serveCommand},
	}
}

// runMain runs one command line and returns its exit code, one of the
// exitcode table's for that command.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runMainIn(ctx, args, os.Stdin, stdout, stderr)
}

// runMainIn is runMain reading standard input from stdin.
func runMainIn(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage(commands()))
		return int(exitcode.Usage)
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		switch {
		case len(args) == 1:
			fmt.Fprint(stdout, usage(commands()))
			return int(exitcode.OK)
		case args[1] == "exit-codes":
			fmt.Fprint(stdout, exitcode.Help())
			return int(exitcode.OK)
		}
		name = args[1]
		args = []string{name, "-h"}
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		fs := flag.NewFlagSet("lab "+name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		do := c.flags(fs)
		if !wantsHelp(args[1:]) {
			// A mistyped flag gets one line, not every flag of the command.
			fs.Usage = func() { fmt.Fprintf(stderr, "lab help %s lists the flags of lab %s\n", name, name) }
		}
		pos, err := parseInterleaved(fs, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(fs.Output(), exitcode.CommandHelp(name))
			return int(exitcode.OK)
		}
		table := tableName(name, args[1:])
		if err != nil {
			// The flag package has said what is wrong. (Under git bisect
			// run, 2 would blame the commit: Documented makes it 128.)
			return int(exitcode.Documented(table, exitcode.Usage))
		}
		err = do(ctx, invocation{args: pos, raw: args, stdin: stdin, out: stdout, errOut: stderr})
		if err != nil {
			fmt.Fprintln(stderr, "lab:", err)
		}
		return exitFor(ctx, table, err)
	}
	fmt.Fprintf(stderr, "lab: unknown command %q\n%s", name, usage(commands()))
	return int(exitcode.Usage)
}

// tableName is the command as the exit-code table names it: lab bisect
// --run answers git bisect run, in its codes.
func tableName(name string, args []string) string {
	if name == "bisect" && slices.ContainsFunc(args, func(a string) bool {
		return a == "--run" || a == "-run" || a == "--run=true" || a == "-run=true"
	}) {
		return exitcode.BisectRun
	}
	if name == "history" {
		return historyTable(args)
	}
	return name
}

// exitFor is the exit code of a command, as the table names it, that
// ended with err: 0 for nil, else the code of what went wrong when the
// table gives it to the command, else the command's plain failure.
func exitFor(ctx context.Context, command string, err error) int {
	if err == nil {
		return int(exitcode.OK)
	}
	return int(exitcode.Documented(command, exitCode(ctx, err)))
}

// exitCode is the code of what went wrong: a signal, a gate, a command's
// own code, the command line, the infrastructure (QEMU, the host, a full
// disk), or else the lab, the kernel or the input.
func exitCode(ctx context.Context, err error) exitcode.Code {
	var ge *report.GateError
	var ce codeError
	var ue usageError
	var fe *spec.FlagError
	var fb *run.FailedBootsError
	var same *run.SameImageError
	var ie *vm.InfraError
	var ss stopSignal
	switch {
	case ctx.Err() != nil && errors.As(context.Cause(ctx), &ss):
		return exitcode.Signalled(ss.sig)
	case ctx.Err() != nil:
		return exitcode.Interrupted
	case errors.As(err, &ge):
		return ge.Code
	case errors.As(err, &ce):
		// Its own code first, whatever it wraps (lab bisect --run
		// turns a usage error into git bisect's "stop").
		return ce.code
	case errors.As(err, &ue), errors.As(err, &fe):
		return exitcode.Usage
	case errors.As(err, &same):
		return exitcode.SameImage
	case errors.As(err, &fb):
		if fb.Infrastructure() {
			return exitcode.Infra
		}
		return exitcode.Failed
	case errors.As(err, &ie), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return exitcode.Infra
	}
	return exitcode.Failed
}

// wantsHelp reports whether the command line asks for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

// usageError is a command line that cannot be carried out as written.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// codeError is a failure with its own exit code (lab bisect's outcomes).
type codeError struct {
	code exitcode.Code
	err  error
}

func (e codeError) Error() string { return e.err.Error() }
func (e codeError) Unwrap() error { return e.err }

// parseInterleaved accepts flags before and after the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// buildCommand builds a run's kernels and initramfs into the cache (for
// boot jobs that run with --no-build on other hosts) and boots nothing.
func buildCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var labFlags spec.Flags
	var runFlags run.Flags
	var ser flagval.Repeated
	labFlags.RegisterFlags(fs)
	runFlags.RegisterFlags(fs)
	registerSeries(fs, &ser)
	return func(ctx context.Context, inv invocation) error {
		if runFlags.NoBuild.IsSet() || runFlags.Shard.IsSet() {
			return usagef("build: --no-build and --shard are for lab run")
		}
		opt, done, err := runOptions(inv, fs, &labFlags, &runFlags, &ser)
		if err != nil {
			return err
		}
		defer done()
		opt.BuildOnly = true
		_, dir, err := run.Run(ctx, opt)
		if err == nil {
			lab := inv.args
			if opt.SaveLab {
				lab = []string{runfolder.Folder{Dir: dir}.Lab()}
			}
			fmt.Fprintf(inv.out, "built; boot with: lab run %s --no-build --cache %s\nbuild record: %s\n", lab[0], opt.CacheDir, dir)
		}
		return err
	}
}

// registerSeries adds --series to a command that runs a lab.
func registerSeries(fs *flag.FlagSet, ser *flagval.Repeated) {
	fs.Var(ser, "series", "the series to run (replaces the lab file's; without a lab file lab makes the lab, prints it and keeps it in the run folder): "+
		"a series folder, an mbox (b4 am's .mbx, with its .cover beside it), one mail, a diff, or - for standard input; "+
		"given more than once, a kernel per series (named v1, v2 by version, or by file) against one baseline, each judged against it and against the one before")
}

func runCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var labFlags spec.Flags
	var runFlags run.Flags
	var gates report.GateFlags
	var junit flagval.String
	var ser flagval.Repeated
	labFlags.RegisterFlags(fs)
	runFlags.RegisterFlags(fs)
	gates.RegisterFlags(fs)
	var hist historyFlags
	hist.RegisterFlags(fs)
	registerSeries(fs, &ser)
	fs.Var(&junit, "junit", "also write the report as JUnit XML to this file (a case per row and per claim)")
	return func(ctx context.Context, inv invocation) error {
		out := inv.out
		opt, done, err := runOptions(inv, fs, &labFlags, &runFlags, &ser)
		if err != nil {
			return err
		}
		defer done()
		where, err := hist.target(opt.ResultsDir)
		if err != nil {
			return err
		}
		res, dir, err := run.Run(ctx, opt)
		var same *run.SameImageError
		if errors.As(err, &same) {
			// Nothing was measured: no report, nothing for the history.
			fmt.Fprintf(os.Stderr, "lab: the kernels are recorded in %s\n", runfolder.Folder{Dir: dir}.Results())
			return err
		}
		if err != nil && res != nil && dir != "" {
			if ctx.Err() != nil {
				fmt.Fprintf(os.Stderr, "lab: interrupted; what was measured is saved in %s\n", dir)
			} else {
				fmt.Fprintf(os.Stderr, "lab: results so far are in %s\n", dir)
			}
		}
		if res == nil || dir == "" {
			return err
		}
		d := report.Build(res, dir, res.LabVersion)
		folder := runfolder.Folder{Dir: dir}
		perr := publishReport(d, res, publish.Options{ReportDir: folder.Report(), TablePath: folder.Table(), JUnitPath: junit.V, Out: out, CI: true})
		recordHistory(ctx, res, dir, where, out, inv.errOut)
		if err != nil {
			return err
		}
		if perr != nil {
			return perr
		}
		return gates.Check(d)
	}
}

// publishReport renders a run's document once and publishes it.
func publishReport(d *report.Document, r *results.Run, opt publish.Options) error {
	o, err := report.Outputs(d, r, isTerminal(opt.Out))
	if err != nil {
		return err
	}
	_, err = publish.Publish(o, opt)
	return err
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// reportFlags are what report and compare share.
type reportFlags struct {
	out   flagval.String
	gates report.GateFlags
}

func (f *reportFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.out, "out", "where the reports go (default RUN-DIR/report, or ./compare-A-B)")
	f.gates.RegisterFlags(fs)
}

func loadRun(dir string) (*results.Run, error) {
	_, r, err := runfolder.Load(dir)
	if err != nil {
		return nil, err
	}
	if len(r.Boots) == 0 && r.Bisect == nil {
		if r.Complete && len(r.Notes) > 0 {
			// A run that had nothing to boot says why (one image).
			return nil, fmt.Errorf("%s: no boots: %s", dir, strings.Join(r.Notes, "; "))
		}
		return nil, fmt.Errorf("%s: no boots yet: the run is still preparing, was only a build (lab build), or was stopped before its first boot", dir)
	}
	return r, nil
}

// reportCommand regenerates every output of a saved run from results.json
// alone.
func reportCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f reportFlags
	var labFile flagval.String
	f.register(fs)
	fs.Var(&labFile, "lab", "judge this lab file's claims instead of those saved with the run")
	return func(ctx context.Context, inv invocation) error {
		args, out := inv.args, inv.out
		if len(args) != 1 {
			return usagef("report takes one run directory, got %d", len(args))
		}
		r, err := loadRun(args[0])
		if err != nil {
			return err
		}
		if r.Bisect != nil {
			return emitBisect(r, publish.Options{ReportDir: f.reportDir(runfolder.Folder{Dir: args[0]}.Report()), Out: out})
		}
		if labFile.IsSet() {
			lab, err := spec.Load(labFile.V)
			if err != nil {
				return err
			}
			r.Claims = testbed.RecordClaims(lab.Claims)
		}
		d := report.Build(r, args[0], version.Lab(""))
		return emit(d, r, f, runfolder.Folder{Dir: args[0]}.Report(), out)
	}
}

// compareCommand sets one variant of two or more runs side by side: a
// column per run, named by its run id, each judged against the first.
func compareCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f reportFlags
	v := flagval.String{V: string(variant.Patched)}
	f.register(fs)
	fs.Var(&v, "variant", "the variant of each run to compare (baseline or patched)")
	return func(ctx context.Context, inv invocation) error {
		args, out := inv.args, inv.out
		if len(args) < 2 {
			return usagef("compare takes two or more run directories, got %d", len(args))
		}
		which, err := variant.Parse(v.V)
		if err != nil {
			return usagef("-variant: %v", err)
		}
		if f.gates.RequireClaims.V {
			return usagef("--require-claims: a compare judges no claims (lab report RUN-DIR --require-claims does)")
		}
		var runs []*results.Run
		var ids []string
		for _, dir := range args {
			r, err := loadRun(dir)
			if err != nil {
				return err
			}
			runs = append(runs, r)
			ids = append(ids, r.RunID)
		}
		d, err := report.BuildCompareRuns(runs, args, which, version.Lab(""))
		if err != nil {
			return err
		}
		return emit(d, nil, f, "compare-"+strings.Join(ids, "-"), out)
	}
}

// emit publishes a regenerated report (lab report, lab compare) and applies
// the gates asked for.
func emit(d *report.Document, r *results.Run, f reportFlags, def string, out io.Writer) error {
	if err := publishReport(d, r, publish.Options{ReportDir: f.reportDir(def), Out: out}); err != nil {
		return err
	}
	return f.gates.Check(d)
}

// reportDir is -out, or def.
func (f *reportFlags) reportDir(def string) string {
	if f.out.V != "" {
		return f.out.V
	}
	return def
}

func tableCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	return func(ctx context.Context, inv invocation) error {
		args, out := inv.args, inv.out
		if len(args) != 1 {
			return usagef("table takes one run directory, got %d", len(args))
		}
		r, err := loadRun(args[0])
		if err != nil {
			return err
		}
		fmt.Fprint(out, report.Text(report.Build(r, args[0], version.Lab("")), isTerminal(out)))
		return nil
	}
}

// explainCommand prints where each moved row of a saved run changed in the
// kernel: its where-blocks, from the run's instruction profiles.
func explainCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	return func(ctx context.Context, inv invocation) error {
		args, out := inv.args, inv.out
		if len(args) != 1 {
			return usagef("explain takes one run directory, got %d", len(args))
		}
		r, err := loadRun(args[0])
		if err != nil {
			return err
		}
		d := report.Build(r, args[0], version.Lab(""))
		for _, g := range report.Grids(d) {
			for _, h := range g.Headlines {
				fmt.Fprintln(out, h)
			}
		}
		if where := report.WhereText(d); where != "" {
			fmt.Fprint(out, where)
			return nil
		}
		switch {
		case len(r.Profiles) == 0:
			fmt.Fprintf(out, "\nrun %s has no profile: lab takes one in the first boot of each kernel, under icount when its QEMU loads lab's plugin, on the wall clock by sampling kernel stacks (not with --profile off, --only or --shard)\n", r.RunID)
		default:
			fmt.Fprintf(out, "\nrun %s has profiles, and no row that moved: nowhere to explain\n", r.RunID)
		}
		return nil
	}
}

func benchmarksCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	return func(ctx context.Context, inv invocation) error {
		args, out := inv.args, inv.out
		if len(args) != 0 {
			return usagef("benchmarks takes no arguments")
		}
		fmt.Fprint(out, benchmark.Doc())
		return nil
	}
}

// isTerminal reports whether w is a terminal: colour only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
