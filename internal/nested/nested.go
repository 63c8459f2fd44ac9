// Package nested runs lab's KVM path on a host whose own KVM cannot run
// lab's guests (this project's machine has a PVM /dev/kvm): it boots an
// outer guest under QEMU's TCG, with a CPU that has AMD's SVM (TCG emulates
// it, nested paging included) and a lab-built kernel with KVM, and inside
// it runs lab host and lab run --accel kvm. The outer guest's root is the
// host's, read-only over virtio-9p; lab's checkout (read-only), its cache and
// the output folder are 9p shares mounted again at their own paths, so that
// the guest sees them wherever they are, and its scratch space hides nothing
// of the host's (view.go). Before it builds anything it checks that, and
// rehearses the guest's mounts on the host (rehearse.go). It exercises the
// code path, not the figures: the inner guest runs under KVM under TCG.
package nested

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"lab/internal/arch"
	"lab/internal/vm"
)

// Options are one smoke run.
type Options struct {
	Arch string // the outer and inner guests' arch
	// RootDir is the outer guest's root on the host, read-only: "/" when
	// the host runs Arch's programs; else a tree of Arch's Debian
	// packages (QEMU and its libraries), e.g. mmdebstrap --variant=extract.
	RootDir string
	HostLab string // lab's binary for the host: it builds the kernels
	Lab     string // lab's binary for Arch, static (CGO_ENABLED=0): it runs in the outer guest
	Self    string // this program's binary for Arch, static: the outer guest's init
	Root    string // lab's checkout
	Cache   string // lab's cache, shared writable with the outer guest
	Out     string // output folder, shared writable
	QEMU    string // the host's QEMU for Arch (default: Arch's)
	// InnerLab and InnerArgs are the lab run inside (with --accel kvm,
	// --no-build, --cache and --results added).
	InnerLab  string
	InnerArgs []string
	CPUs      int // outer guest's vCPUs
	MemoryMiB int
	// Timeout bounds the outer guest, from QEMU's start.
	Timeout time.Duration
	Log     io.Writer
	// Rehearser is this program for the host, run with RehearseFlag to
	// rehearse the guest's mounts before anything is built; "" skips it.
	Rehearser string
}

// Result is what a smoke run measured.
type Result struct {
	OuterKernel string        // image
	OuterBuild  time.Duration // lab build of the outer kernel
	InnerBuild  time.Duration // lab build of the inner lab (cached: seconds)
	// OuterToInit is QEMU's start to the outer guest's init, host time.
	OuterToInit time.Duration
	OuterWall   time.Duration // QEMU's start to its exit
	Status      Status        // from the outer guest
	// InnerRun is the inner lab run's results.json, "" when it wrote none.
	InnerRun string
}

// OuterLab is the lab file lab build makes the outer kernel of arch from:
// any series does (its baseline is built); the kernel gets
// nested-host.config and nested-host-<arch>.config.
func OuterLab(arch string) string {
	return fmt.Sprintf(`name: nested-host
description: the outer guest's kernel of scripts/kvm-smoke (KVM, virtio-9p)
series: uprobe-srcu
mode: revert
config: [common.config, nested-host.config, nested-host-%[1]s.config]
matrix:
  arch: [%[1]s]
  cpus: [1]
  benchmarks: [syscall-count]
  producers: [1]
  boots: 1
  duration: 1s
  warmup: 0s
  measure: wall
`, arch)
}

// Check does what Run does before it builds anything, and no more: it
// resolves the paths, stages the programs, writes the job, and checks that
// the outer guest will see what it needs (CheckView), that QEMU takes the
// outer line (ProbeArgs), and, as root, rehearses the guest's mounts
// (Rehearse). Seconds, no kernel: the test suite runs it.
func Check(ctx context.Context, o Options) error {
	p, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	defer p.cleanup()
	// The staged copies are for a boot; the job and the logs stay.
	p.unstage()
	fmt.Fprintf(p.o.Log, "kvm-smoke: check passed: the outer guest would see everything it needs (logs in %s)\n", p.o.Out)
	return nil
}

// Run builds the outer kernel and the inner lab's kernels through lab's
// cache, boots the outer guest and waits for it, and reads what it did.
// Every process it starts is gone when it returns, also when ctx ends. It
// checks first (see Check), so that a guest that could not see what it
// needs fails before the outer kernel's build.
func Run(ctx context.Context, o Options) (Result, error) {
	var res Result
	p, err := prepare(ctx, o)
	if err != nil {
		return res, err
	}
	defer p.cleanup()
	o = p.o
	start := time.Now()
	kernel, err := buildOuterKernel(ctx, o)
	if err != nil {
		return res, err
	}
	res.OuterKernel, res.OuterBuild = kernel, time.Since(start)
	fmt.Fprintf(o.Log, "kvm-smoke: outer kernel %s (lab build: %s)\n", kernel, res.OuterBuild.Round(time.Second))
	start = time.Now()
	args := append([]string{"build", o.InnerLab}, o.InnerArgs...)
	args = append(args, "--cache", o.Cache, "--results", filepath.Join(o.Out, "inner-build"))
	if err := runLab(ctx, o, "inner-build.log", args...); err != nil {
		return res, fmt.Errorf("build the inner lab's kernels: %w", err)
	}
	res.InnerBuild = time.Since(start)
	fmt.Fprintf(o.Log, "kvm-smoke: inner lab built (lab build: %s)\n", res.InnerBuild.Round(time.Second))

	outer := p.outer(kernel)
	if err := boot(ctx, o, outer, &res); err != nil {
		return res, err
	}
	if err := readJSON(filepath.Join(o.Out, StatusFile), &res.Status); err != nil {
		return res, fmt.Errorf("the outer guest left no status (see %s): %w", outer.Console, err)
	}
	res.InnerRun = newest(filepath.Join(o.Out, "results"), "results.json")
	return res, nil
}

// prepared is a smoke run up to its builds: paths resolved, programs
// staged, the job written and checked.
type prepared struct {
	o       Options
	arch    arch.Arch
	stage   staging
	job     Job
	jobPath string
	tscKHz  int64 // the host's TSC rate, for the outer kernel (Outer.TSCkHz)
}

func prepare(ctx context.Context, o Options) (prepared, error) {
	p := prepared{}
	a, err := arch.Lookup(o.Arch)
	if err != nil {
		return p, err
	}
	if o.QEMU == "" {
		o.QEMU = a.QEMU
	}
	if err := o.resolvePaths(); err != nil {
		return p, err
	}
	st, err := o.stage()
	if err != nil {
		return p, err
	}
	p = prepared{o: o, arch: a, stage: st, job: o.job(st), jobPath: filepath.Join(st.host, "job.json")}
	if a.TSCkHzParam != "" {
		p.tscKHz, _ = vm.HostTSCkHz()
	}
	if err := p.writeJob(); err != nil {
		p.cleanup()
		return p, err
	}
	if err := p.check(ctx); err != nil {
		p.cleanup()
		return p, err
	}
	return p, nil
}

func (p prepared) writeJob() error {
	data, err := json.MarshalIndent(p.job, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.jobPath, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the outer guest's job: %w", err)
	}
	return nil
}

// check is Check's three checks, the cheapest first.
func (p prepared) check(ctx context.Context) error {
	o := p.o
	for _, l := range Describe(o.RootDir, p.job.Mounts, p.job.Needs) {
		fmt.Fprintf(o.Log, "kvm-smoke: outer guest: %s\n", l)
	}
	if err := CheckView(o.RootDir, p.job.Mounts, p.job.Needs); err != nil {
		return fmt.Errorf("the outer guest would not see what it needs (nothing built or booted):\n%w", err)
	}
	if err := probeQEMU(ctx, p.outer(""), filepath.Join(o.Out, "qemu-probe.log")); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "kvm-smoke: QEMU takes the outer guest's line (probed paused, without a kernel)\n")
	if o.Rehearser == "" {
		return nil
	}
	note, err := rehearse(ctx, o.Rehearser, p.jobPath, o.RootDir, filepath.Join(o.Out, "rehearsal.log"))
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "kvm-smoke: rehearsal of the outer guest's mounts on the host: %s\n", note)
	return nil
}

// outer is the outer guest's QEMU for kernel ("" for the probe).
func (p prepared) outer(kernel string) Outer {
	return Outer{Arch: p.arch, QEMU: p.o.QEMU, Kernel: kernel, Init: p.stage.lab(p.o.Self), Job: p.stage.lab(p.jobPath),
		CPUs: p.o.CPUs, MemoryMiB: p.o.MemoryMiB, Console: filepath.Join(p.o.Out, "console.log"), Root: p.o.RootDir,
		Shares: sharesOf(p.job.Mounts), TSCkHz: p.tscKHz}
}

// unstage removes the staged programs, which only a boot uses.
func (p prepared) unstage() {
	for _, f := range []string{p.o.Lab, p.o.Self} {
		os.Remove(f)
	}
}

// cleanup removes a stage made outside the output folder, which would
// otherwise be left behind.
func (p prepared) cleanup() {
	if p.stage.temp {
		os.RemoveAll(p.stage.host)
	}
}

// sharesOf are the 9p shares among ms, for QEMU.
func sharesOf(ms []Mount) []Share {
	var out []Share
	for _, m := range ms {
		if m.FS == fs9p {
			out = append(out, Share{Tag: m.Tag, Path: m.Host, ReadOnly: m.ReadOnly, Why: m.Why})
		}
	}
	return out
}

// probeQEMU starts the outer guest's QEMU paused, without a kernel, and
// quits it over QMP: it fails when QEMU refuses the line (a share it
// cannot open, a path its option syntax mangles). Its output goes to
// logPath.
func probeQEMU(ctx context.Context, outer Outer, logPath string) error {
	args, err := outer.ProbeArgs()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, outer.QEMU, args...)
	cmd.Stdin = strings.NewReader(`{"execute":"qmp_capabilities"}` + "\n" + `{"execute":"quit"}` + "\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	line := outer.QEMU + " " + strings.Join(args, " ") + "\n"
	if werr := os.WriteFile(logPath, append([]byte(line), out...), 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("QEMU refused the outer guest's line (probed paused, without a kernel; log %s): %w\n%s",
			logPath, err, bytes.TrimSpace(out))
	}
	return nil
}

// staging is where the outer guest's init, lab and the job are: a folder
// the kernel sees on the guest's root before init mounts anything.
type staging struct {
	host  string // the folder on the host
	guest string // the same in the outer guest
	temp  bool   // made for this run outside the output folder: removed after it
}

// lab is where the guest sees a staged host file.
func (s staging) lab(host string) string {
	return filepath.Join(s.guest, strings.TrimPrefix(host, s.host))
}

// resolvePaths makes the host paths absolute and free of symlinks: the
// guest mounts each share at its path, and CheckView compares paths as
// text (a checkout under /var/run is under /run).
func (o *Options) resolvePaths() error {
	for _, d := range []string{o.Out, o.Cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, p := range []*string{&o.Root, &o.Cache, &o.Out, &o.RootDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if *p, err = filepath.EvalSymlinks(abs); err != nil {
			return fmt.Errorf("resolve %s: %w", abs, err)
		}
	}
	for _, p := range []*string{&o.HostLab, &o.Lab, &o.Self} {
		var err error
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	return nil
}

// stage copies lab and this program where the outer guest's kernel finds
// them, and with a root of its own makes the shares' mount points there.
func (o *Options) stage() (staging, error) {
	st, err := o.stageDir()
	if err != nil {
		return st, err
	}
	if o.RootDir != "/" {
		for _, d := range []string{"proc", "sys", "dev", o.Cache, o.Out, o.Root} {
			if err := os.MkdirAll(filepath.Join(o.RootDir, d), 0o755); err != nil {
				return st, err
			}
		}
	}
	for _, p := range []*string{&o.Lab, &o.Self} {
		c, err := copyExecutable(*p, st.host)
		if err != nil {
			return st, err
		}
		*p = c
	}
	return st, nil
}

// stageDir is where the staged programs go. With a root of its own, in it.
// With the host's root, the output folder's bin/, unless the kernel's own
// /dev hides it (an output folder under /dev/shm): then a new folder in the
// first of the temporary folder and /var/tmp that the kernel sees.
func (o *Options) stageDir() (staging, error) {
	if o.RootDir != "/" {
		return staging{host: filepath.Join(o.RootDir, "kvm-smoke"), guest: "/kvm-smoke"}, nil
	}
	early := View(kernelMounts("/"))
	seen := func(p string) bool { host, _ := early.resolve(p); return host == p }
	if bin := filepath.Join(o.Out, "bin"); seen(bin) {
		return staging{host: bin, guest: bin}, nil
	}
	tried := []string{o.Out}
	for _, d := range []string{os.TempDir(), "/var/tmp"} {
		d, err := filepath.EvalSymlinks(d)
		if err != nil || !seen(d) {
			tried = append(tried, d)
			continue
		}
		tmp, err := os.MkdirTemp(d, "kvm-smoke-stage-")
		if err != nil {
			return staging{}, fmt.Errorf("stage the outer guest's init: %w", err)
		}
		return staging{host: tmp, guest: tmp, temp: true}, nil
	}
	return staging{}, fmt.Errorf("stage the outer guest's init: %s are under /dev, which the outer kernel mounts its own devtmpfs over before init runs",
		strings.Join(tried, ", "))
}

// job is what the outer guest runs: lab plan (the inner lab's file read as
// the inner run reads it: the step the rehearsal runs), lab host, then the
// inner lab under KVM.
func (o Options) job(st staging) Job {
	results := filepath.Join(o.Out, "results")
	lab := st.lab(o.Lab)
	inner := append([]string{o.InnerLab}, o.InnerArgs...)
	inner = append(inner, "--accel", "kvm", "--cache", o.Cache)
	plan := append(append([]string{lab, "plan"}, inner...), "--shards", "1", "--results", results)
	run := append(append([]string{lab, "run"}, inner...), "--no-build", "--no-history", "--results", results)
	shares := []Share{
		// labs/, kernel-config/, patches/: a root of its own does not hold
		// them, and the host's root may hide them where they are.
		{Tag: "labsrc", Path: o.Root, ReadOnly: true, Why: "lab's checkout"},
		{Tag: "labcache", Path: o.Cache, Why: "lab's cache"},
		{Tag: "labout", Path: o.Out, Why: "the output folder"},
	}
	return Job{
		Mounts: guestMounts(shares),
		Needs:  o.needs(st),
		Env: []string{"PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"HOME=" + os.Getenv("HOME"), "LAB_ROOT=" + o.Root, "TMPDIR=" + ScratchDir, "TERM=dumb"},
		Dir: o.Root,
		Out: o.Out,
		Steps: []Step{
			{Name: "lab-plan", Args: plan, Timeout: 2 * time.Minute, Rehearse: true},
			{Name: "lab-host", Args: []string{lab, "host"}, Timeout: 2 * time.Minute},
			{Name: "lab-run-kvm", Args: run, Timeout: o.Timeout},
		},
	}
}

// needs are the paths the outer guest uses, each with what for.
func (o Options) needs(st staging) []Need {
	same := func(p, what string, writable bool) Need {
		return Need{Guest: p, Host: p, What: what, Writable: writable}
	}
	staged := func(host, what string, early bool) Need {
		return Need{Guest: st.lab(host), Host: host, What: what, Early: early}
	}
	innerLab := o.InnerLab
	if !filepath.IsAbs(innerLab) {
		innerLab = filepath.Join(o.Root, innerLab)
	}
	return []Need{
		staged(o.Self, "the outer guest's init", true),
		staged(filepath.Join(st.host, "job.json"), "the outer guest's job", true),
		staged(o.Lab, "lab for the outer guest", false),
		same(o.Root, "lab's checkout", false),
		same(innerLab, "the inner lab's file", false),
		same(o.Cache, "lab's cache", true),
		same(o.Out, "the output folder", true),
		{Guest: ScratchDir, What: "the guest's scratch space (TMPDIR)", Writable: true},
	}
}

// buildOuterKernel is lab build of OuterLab's baseline: lab's cache keys
// it by content, so a second run compiles nothing.
func buildOuterKernel(ctx context.Context, o Options) (string, error) {
	dir := filepath.Join(o.Out, "outer-build")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	labFile := filepath.Join(dir, "nested-host.yaml")
	if err := os.WriteFile(labFile, []byte(OuterLab(o.Arch)), 0o644); err != nil {
		return "", err
	}
	// --sandbox off: the lab file is ours, and lab's own series.
	if err := runLab(ctx, o, "outer-build.log", "build", labFile, "--only", "baseline", "--sandbox", "off",
		"--cache", o.Cache, "--results", dir); err != nil {
		return "", fmt.Errorf("build the outer kernel: %w", err)
	}
	var rec struct {
		Kernels []struct {
			Arch  string `json:"arch"`
			Build struct {
				Image string `json:"image"`
			} `json:"build"`
		} `json:"kernels"`
	}
	path := newest(dir, "results.json")
	if path == "" {
		return "", fmt.Errorf("lab build of the outer kernel left no results.json under %s", dir)
	}
	if err := readJSON(path, &rec); err != nil {
		return "", err
	}
	for _, k := range rec.Kernels {
		if k.Arch == o.Arch && k.Build.Image != "" {
			return k.Build.Image, nil
		}
	}
	return "", fmt.Errorf("%s: no %s kernel", path, o.Arch)
}

// runLab runs lab on the host, its output to Out/logName and the log. On
// ctx's end lab gets SIGINT, to stop its builds itself, then SIGKILL.
func runLab(ctx context.Context, o Options, logName string, args ...string) error {
	f, err := os.Create(filepath.Join(o.Out, logName))
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, o.HostLab, args...)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "LAB_ROOT="+o.Root)
	w := io.MultiWriter(f, prefixed(o.Log, "  "))
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	fmt.Fprintf(o.Log, "kvm-smoke: %s %s\n", o.HostLab, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("lab %s (log %s): %w", args[0], f.Name(), err)
	}
	return nil
}

// boot runs the outer guest to its end, copying its console to the log. On
// ctx's end or the timeout QEMU is killed, and with it every guest inside.
func boot(ctx context.Context, o Options, outer Outer, res *Result) error {
	args, err := outer.Args()
	if err != nil {
		return err
	}
	if err := os.WriteFile(outer.Console, nil, 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, outer.QEMU, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	qemuLog, err := os.Create(filepath.Join(o.Out, "qemu.log"))
	if err != nil {
		return err
	}
	defer qemuLog.Close()
	cmd.Stdout, cmd.Stderr = qemuLog, qemuLog
	if err := os.WriteFile(filepath.Join(o.Out, "qemu.args"), []byte(outer.QEMU+" "+strings.Join(args, " ")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "kvm-smoke: boot the outer guest: %s %s\n", outer.QEMU, strings.Join(args, " "))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", outer.QEMU, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tail := &consoleTail{path: outer.Console, log: o.Log, start: start}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			res.OuterWall = time.Since(start)
			tail.poll()
			res.OuterToInit = tail.up
			if ctx.Err() != nil {
				return fmt.Errorf("outer guest stopped after %s: %w (console: %s)", res.OuterWall.Round(time.Second), ctx.Err(), outer.Console)
			}
			if err != nil {
				return fmt.Errorf("outer QEMU: %w (see %s and %s)", err, qemuLog.Name(), outer.Console)
			}
			return nil
		case <-tick.C:
			tail.poll()
		}
	}
}

// consoleTail copies new whole lines of the console log to log, and notes
// when the outer guest's init said it was up.
type consoleTail struct {
	path  string
	log   io.Writer
	start time.Time
	off   int64
	up    time.Duration
}

func (t *consoleTail) poll() {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return // a partial line waits for its end
		}
		t.off += int64(len(line))
		line = strings.TrimRight(line, "\r\n")
		if t.up == 0 && strings.HasPrefix(line, UpMarker) {
			t.up = time.Since(t.start)
		}
		fmt.Fprintf(t.log, "outer | %s\n", line)
	}
}

// copyExecutable copies the program at path into dir, and returns the copy.
func copyExecutable(path, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", path, err)
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return "", fmt.Errorf("copy %s: %w", path, err)
	}
	return dst, nil
}

// newest is the most recently modified file called name under dir, "" when
// there is none.
func newest(dir, name string) string {
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, p)
		}
		return nil
	})
	sort.Slice(found, func(i, j int) bool { return modTime(found[i]).Before(modTime(found[j])) })
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

func modTime(p string) time.Time {
	fi, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// ErrStepFailed is returned by Check when a step of the outer guest failed.
var ErrStepFailed = errors.New("a step in the outer guest failed")

// ErrNeedUnseen is returned by Check when the outer guest could not use a
// path it needs, and so ran no step.
var ErrNeedUnseen = errors.New("the outer guest could not use what it needs")

// Check says whether every step of the outer guest succeeded.
func (r Result) Check() error {
	if r.Status.Problem != "" {
		return fmt.Errorf("%w:\n%s", ErrNeedUnseen, r.Status.Problem)
	}
	if len(r.Status.Steps) == 0 {
		return fmt.Errorf("%w: none ran", ErrStepFailed)
	}
	for _, s := range r.Status.Steps {
		if s.ExitCode != 0 {
			return fmt.Errorf("%w: %s exited %d (%s)", ErrStepFailed, s.Name, s.ExitCode, s.Error)
		}
	}
	return nil
}
