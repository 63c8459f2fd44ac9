// Command lab tells whether a kernel patch series makes the kernel faster:
// it builds the kernel with and without the series, boots both in QEMU, runs
// probe benchmarks in the guest and prints baseline against patched.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"lab/internal/initramfs"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/run"
	"lab/internal/spec"
)

const usage = `usage:
  lab run LAB.yaml [flags]     build, boot and measure baseline against patched
  lab report RUN-DIR [flags]   regenerate every report of a saved run from its results.json
  lab compare RUN-A RUN-B      one variant of run A against the same variant of run B
  lab table RUN-DIR            print the table of a saved run again

report and compare flags:
  -out DIR                  where the reports go (default RUN-DIR/report, or ./compare-A-B)
  -lab LAB.yaml             report: judge this lab file's claims instead of those saved with the run
  -variant V                compare: which variant of each run (default patched)
  -fail-on-regression       exit 3 when a non-control row is significantly slower
  -require-claims           exit 4 unless every claim of the lab is reproduced

run flags (they override the lab file):
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = cmdRun(ctx, os.Args[2:])
	case "table":
		err = cmdTable(os.Args[2:])
	case "report":
		err = cmdReport(os.Args[2:])
	case "compare":
		err = cmdCompare(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		runFlags(flag.NewFlagSet("run", flag.ContinueOnError)).fs.PrintDefaults()
		return
	default:
		err = fmt.Errorf("unknown command %q\n%s", os.Args[1], usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		var ge *gateError
		if errors.As(err, &ge) {
			os.Exit(ge.code)
		}
		os.Exit(1)
	}
}

type flags struct {
	fs        *flag.FlagSet
	arch      *string
	cpus      *string
	producers *string
	benches   *string
	boots     *int
	duration  *time.Duration
	warmup    *time.Duration
	measure   *string
	accel     *string
	cache     *string
	results   *string
	jobs      *int
	only      *string
	noCtl     *bool
	failReg   *bool
	reqClaims *bool
	numa      *string
	sockets   *int
	clusters  *int
	cores     *int
	threads   *int
	memory    *string
	pin       *string
}

func runFlags(fs *flag.FlagSet) flags {
	home, _ := os.UserHomeDir()
	cache := os.Getenv("LAB_CACHE")
	if cache == "" {
		cache = filepath.Join(home, ".cache", "lab")
	}
	return flags{
		fs:        fs,
		arch:      fs.String("arch", "", "guest architectures, comma-separated (x86_64, arm64)"),
		cpus:      fs.String("cpus", "", "vCPU counts, comma-separated"),
		producers: fs.String("producers", "", "producer counts, comma-separated"),
		benches:   fs.String("benchmarks", "", "benchmarks, comma-separated"),
		boots:     fs.Int("boots", 0, "boots per variant"),
		duration:  fs.Duration("duration", 0, "measured time per benchmark (one sample a second)"),
		warmup:    fs.Duration("warmup", -1, "warm-up time per benchmark, dropped"),
		measure:   fs.String("measure", "", "clock: auto, wall or icount"),
		accel:     fs.String("accel", "", "force an accelerator: kvm or tcg (default: KVM when it really works)"),
		cache:     fs.String("cache", cache, "cache of sources, kernels and images ($LAB_CACHE)"),
		results:   fs.String("results", "", "results folder (default: results/ in lab's checkout)"),
		jobs:      fs.Int("j", 0, "make -j for kernel builds (default: host CPUs)"),
		only:      fs.String("only", "", "boot only this variant (baseline or patched): for soak and debugging runs"),
		noCtl:     fs.Bool("no-controls", false, "do not add the usermode-count and syscall-count controls to each boot"),
		failReg:   fs.Bool("fail-on-regression", false, "exit 3 when a non-control row is significantly slower"),
		reqClaims: fs.Bool("require-claims", false, "exit 4 unless every claim of the lab is reproduced"),
		numa:      fs.String("numa", "", "NUMA node counts, comma-separated: each splits vCPUs and memory evenly (1: no NUMA)"),
		sockets:   fs.Int("sockets", 0, "sockets (default: one per NUMA node)"),
		clusters:  fs.Int("clusters", 0, "clusters per socket (arm64)"),
		cores:     fs.Int("cores", 0, "cores per cluster or socket (default: what the vCPUs need)"),
		threads:   fs.Int("threads", 0, "threads per core (default 1)"),
		memory:    fs.String("memory", "", "guest memory, e.g. 2G"),
		pin:       fs.String("pin", "", "pin vCPU threads to host CPUs: auto (when a host CPU is left over), on or off"),
	}
}

// parseInterleaved accepts flags before and after the lab file.
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

func cmdRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("run takes one lab file, got %d", len(pos))
	}
	lab, err := spec.Load(pos[0])
	if err != nil {
		return err
	}
	if err := override(lab, f); err != nil {
		return err
	}
	root, err := initramfs.ModuleRoot(".")
	if err != nil {
		if root, err = initramfs.ModuleRoot(lab.Root); err != nil {
			return err
		}
	}
	resultsDir := *f.results
	if resultsDir == "" {
		resultsDir = filepath.Join(root, "results")
	}
	res, dir, err := run.Run(ctx, run.Options{
		Lab: lab, CacheDir: *f.cache, ResultsDir: resultsDir, ModuleRoot: root,
		Accel: *f.accel, Command: append([]string{"lab", "run"}, args...), Out: os.Stdout, Jobs: *f.jobs, Only: *f.only,
	})
	if err != nil && res != nil && dir != "" {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(os.Stderr, "lab: interrupted; what was measured is saved in %s\n", dir)
		} else {
			fmt.Fprintf(os.Stderr, "lab: results so far are in %s\n", dir)
		}
	}
	if res == nil || dir == "" {
		return err
	}
	d := report.Build(res, dir, res.LabVersion)
	files, ferr := report.Files(d, res)
	if ferr == nil {
		var paths []string
		if paths, ferr = report.Write(filepath.Join(dir, "report"), files); ferr == nil {
			fmt.Printf("reports: %s\n", strings.Join(paths, " "))
			printClaims(d)
		}
	}
	if err != nil {
		return err
	}
	if ferr != nil {
		return ferr
	}
	return gate(d, *f.failReg, *f.reqClaims)
}

// gateError is a run or report that CI should fail, with its exit code.
type gateError struct {
	code int
	msg  string
}

func (e *gateError) Error() string { return e.msg }

// gate turns --fail-on-regression and --require-claims into exit codes.
func gate(d *report.Document, failReg, reqClaims bool) error {
	if failReg {
		if reg := report.Regressions(d.Tables); len(reg) > 0 {
			return &gateError{3, "significant regressions:\n  " + strings.Join(reg, "\n  ")}
		}
	}
	if reqClaims {
		if ok, bad := report.ClaimsOK(d.Claims); !ok {
			return &gateError{4, "claims not reproduced:\n  " + strings.Join(bad, "\n  ")}
		}
	}
	return nil
}

func printClaims(d *report.Document) {
	for _, c := range d.Claims {
		fmt.Printf("claim: %s: %s\n", report.ClaimText(c.Claim), strings.ToUpper(c.Verdict))
	}
}

type reportFlags struct {
	lab       *string
	out       *string
	variant   *string
	failReg   *bool
	reqClaims *bool
}

func newReportFlags(fs *flag.FlagSet) reportFlags {
	return reportFlags{
		lab:       fs.String("lab", "", "judge the claims of this lab file instead of those saved with the run"),
		out:       fs.String("out", "", "where the reports go"),
		variant:   fs.String("variant", "patched", "compare: the variant of each run"),
		failReg:   fs.Bool("fail-on-regression", false, "exit 3 when a non-control row is significantly slower"),
		reqClaims: fs.Bool("require-claims", false, "exit 4 unless every claim of the lab is reproduced"),
	}
}

func loadRun(dir string) (*results.Run, error) {
	return results.Load(filepath.Join(dir, "results.json"))
}

// cmdReport regenerates every output of a saved run from results.json alone.
func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	f := newReportFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("report takes one run directory, got %d", len(pos))
	}
	r, err := loadRun(pos[0])
	if err != nil {
		return err
	}
	if *f.lab != "" {
		lab, err := spec.Load(*f.lab)
		if err != nil {
			return err
		}
		r.Claims = lab.Claims
	}
	d := report.Build(r, pos[0], version())
	return emit(d, r, *f.out, filepath.Join(pos[0], "report"), f)
}

// cmdCompare sets one variant of run A against the same variant of run B.
func cmdCompare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	f := newReportFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("compare takes two run directories, got %d", len(pos))
	}
	a, err := loadRun(pos[0])
	if err != nil {
		return err
	}
	b, err := loadRun(pos[1])
	if err != nil {
		return err
	}
	d := report.BuildCompare(a, b, pos[0], pos[1], *f.variant, version())
	if len(d.Tables) == 0 {
		return fmt.Errorf("no %s boots in %s and %s", *f.variant, pos[0], pos[1])
	}
	def := fmt.Sprintf("compare-%s-%s", a.RunID, b.RunID)
	return emit(d, nil, *f.out, def, f)
}

func emit(d *report.Document, r *results.Run, out, def string, f reportFlags) error {
	if out == "" {
		out = def
	}
	files, err := report.Files(d, r)
	if err != nil {
		return err
	}
	paths, err := report.Write(out, files)
	if err != nil {
		return err
	}
	fmt.Print(report.Text(d.Lab, d.Tables, isTerminal(os.Stdout)))
	printClaims(d)
	fmt.Printf("reports: %s\n", strings.Join(paths, " "))
	return gate(d, *f.failReg, *f.reqClaims)
}

// isTerminal reports whether f is a terminal: colour only there.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// version is lab's own version, from the build information.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 7 {
			return rev[:7] + dirty
		}
	}
	return "unknown"
}

// override applies command-line flags on top of the lab file.
func override(lab *spec.Lab, f flags) error {
	m := &lab.Matrix
	if *f.arch != "" {
		m.Arch = strings.Split(*f.arch, ",")
	}
	var err error
	if *f.cpus != "" {
		if m.CPUs, err = ints("--cpus", *f.cpus); err != nil {
			return err
		}
		// Producer counts above the vCPUs cannot run; with clip_producers
		// each guest drops them itself, otherwise keep those that fit.
		if !m.ClipProducers {
			var keep []int
			for _, p := range m.Producers {
				if p <= minInt(m.CPUs) {
					keep = append(keep, p)
				}
			}
			if len(keep) == 0 {
				keep = []int{1}
			}
			m.Producers = keep
		}
	}
	if *f.producers != "" {
		if m.Producers, err = ints("--producers", *f.producers); err != nil {
			return err
		}
	}
	if *f.benches != "" {
		m.Benchmarks = strings.Split(*f.benches, ",")
	}
	if *f.noCtl {
		off := false
		m.Controls = &off
	}
	if *f.boots != 0 {
		m.Boots = *f.boots
	}
	if *f.duration != 0 {
		m.Duration.Duration = *f.duration
	}
	if *f.warmup >= 0 {
		m.Warmup.Duration = *f.warmup
	}
	if *f.measure != "" {
		m.Measure = *f.measure
	}
	if *f.numa != "" {
		if m.NUMA, err = ints("--numa", *f.numa); err != nil {
			return err
		}
		m.NUMALayout = nil
	}
	if *f.sockets != 0 || *f.clusters != 0 || *f.cores != 0 || *f.threads != 0 {
		m.Sockets, m.Clusters, m.Cores, m.Threads = *f.sockets, *f.clusters, *f.cores, *f.threads
	}
	if *f.memory != "" {
		m.Memory = *f.memory
	}
	if *f.pin != "" {
		m.Pin = *f.pin
	}
	if err := lab.Validate(); err != nil {
		return fmt.Errorf("with the command-line flags: %w", err)
	}
	return nil
}

func minInt(x []int) int {
	m := x[0]
	for _, v := range x {
		m = min(m, v)
	}
	return m
}

func ints(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func cmdTable(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("table takes one run directory")
	}
	r, err := results.Load(filepath.Join(args[0], "results.json"))
	if err != nil {
		return err
	}
	fmt.Print(report.Render(r.Lab, report.Tables(r)))
	return nil
}
