// Command kvm-smoke runs lab's KVM path end to end on a host without usable
// KVM, nested under TCG (see package nested): scripts/kvm-smoke builds it
// and lab, and runs it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"lab/internal/nested"
	"lab/internal/results"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == nested.GuestFlag {
		// PID 1 of the outer guest: its standard output is the console.
		nested.Guest(os.Args[2], os.Stdout)
		return
	}
	if len(os.Args) == 4 && os.Args[1] == nested.RehearseFlag {
		// Started by check below, in a mount namespace of its own.
		if err := nested.Rehearse(os.Args[2], os.Args[3], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "kvm-smoke:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kvm-smoke:", err)
		os.Exit(1)
	}
}

func run() error {
	home, _ := os.UserHomeDir()
	root, _ := os.Getwd()
	o := nested.Options{Root: root, Log: os.Stdout}
	var inner string
	var check bool
	flag.StringVar(&o.Arch, "arch", "x86_64", "the guests' arch: x86_64, or arm64 (needs -root)")
	flag.StringVar(&o.RootDir, "root", "/", "the outer guest's root, read-only: / when this host runs the arch's programs, else a tree of its Debian packages")
	flag.StringVar(&o.HostLab, "host-lab", filepath.Join(root, "lab"), "lab's binary for this host (it builds the kernels)")
	flag.StringVar(&o.Lab, "lab", filepath.Join(root, "lab"), "lab's binary for the arch, built with CGO_ENABLED=0 (it runs in the outer guest)")
	flag.StringVar(&o.Self, "init", "", "this program for the arch, static: the outer guest's init (default: this binary)")
	flag.StringVar(&o.Cache, "cache", filepath.Join(home, ".cache", "lab"), "lab's cache (shared writable with the outer guest)")
	flag.StringVar(&o.Out, "out", filepath.Join(root, "results", "kvm-smoke", time.Now().UTC().Format("20060102-150405")), "output folder")
	flag.StringVar(&o.QEMU, "qemu", "", "QEMU for the outer guest (default: the arch's)")
	flag.StringVar(&o.InnerLab, "inner-lab", "labs/uprobe-srcu.yaml", "the lab run inside, under KVM")
	flag.StringVar(&inner, "inner-args", "--cpus 1 --benchmarks uprobe-nop --producers 1 --boots 1 --duration 1s --warmup 0s",
		"its shape: lab run flags (--arch, --accel kvm, --no-build, --cache and --results are added)")
	flag.IntVar(&o.CPUs, "cpus", 2, "the outer guest's vCPUs")
	flag.IntVar(&o.MemoryMiB, "memory", 3072, "the outer guest's memory, MiB")
	flag.DurationVar(&o.Timeout, "timeout", 40*time.Minute, "longest the outer guest may run")
	flag.BoolVar(&check, "check", false, "check only, in seconds: that the outer guest would see what it needs, that QEMU takes its line, and (as root) a rehearsal of its mounts; nothing built or booted")
	flag.Parse()
	o.InnerArgs = append([]string{"--arch", o.Arch}, strings.Fields(inner)...)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program: %w", err)
	}
	if o.Self == "" {
		o.Self = self
	}
	// This program, for the host: it rehearses the guest's mounts.
	o.Rehearser = self
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if check {
		return nested.Check(ctx, o)
	}
	res, err := nested.Run(ctx, o)
	if err != nil {
		return err
	}
	summary(res)
	return res.Check()
}

func summary(r nested.Result) {
	fmt.Println()
	fmt.Println("kvm-smoke: summary")
	fmt.Printf("  outer kernel: %s (lab build %s; inner lab's build %s)\n", r.OuterKernel, r.OuterBuild.Round(time.Second), r.InnerBuild.Round(time.Second))
	fmt.Printf("  outer guest (TCG): QEMU start to init %s host time; kernel uptime at init %.1f s; QEMU ran %s\n",
		r.OuterToInit.Round(100*time.Millisecond), r.Status.Uptime.Seconds(), r.OuterWall.Round(time.Second))
	for _, l := range r.Status.KVM {
		fmt.Printf("  outer kernel: %s\n", l)
	}
	for _, s := range r.Status.Steps {
		fmt.Printf("  step %s: exit %d after %s (%s)\n", s.Name, s.ExitCode, s.Elapsed.Round(100*time.Millisecond), s.Output)
	}
	if r.InnerRun == "" {
		fmt.Println("  inner run: no results.json")
		return
	}
	var run results.Run
	data, err := os.ReadFile(r.InnerRun)
	if err == nil {
		err = json.Unmarshal(data, &run)
	}
	if err != nil {
		fmt.Printf("  inner run %s: %v\n", r.InnerRun, err)
		return
	}
	for _, b := range run.Boots {
		if b.Outcome == nil {
			fmt.Printf("  inner boot %d (%s): QEMU did not start\n", b.Index, b.Variant)
			continue
		}
		fmt.Printf("  inner boot %d (%s, %s nested=%q): QEMU start to agent %s, QEMU ran %s\n", b.Index, b.Variant, b.Accel.Name, b.Accel.Nested,
			b.Outcome.ToAgent.Round(100*time.Millisecond), b.Outcome.Wall.Round(100*time.Millisecond))
	}
	fmt.Printf("  inner run: %s\n", r.InnerRun)
}
