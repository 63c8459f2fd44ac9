package nested

import (
	"slices"
	"strings"
	"testing"
)

// QEMU's options take a comma of a path doubled, and the kernel's command
// line a path with a space quoted.
func TestOuterArgsEscapePaths(t *testing.T) {
	dir := "/root/kvm smoke,x"
	o := Outer{Arch: mustArch(t, "x86_64"), Root: "/", QEMU: "qemu-system-x86_64", Kernel: "/c/k/vmlinux",
		Init: dir + "/out/bin/kvm-smoke", Job: dir + "/out/bin/job.json", CPUs: 1, MemoryMiB: 1024,
		Console: dir + "/out/console.log", Shares: []Share{{Tag: "labsrc", Path: dir, ReadOnly: true}}}
	args, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"file,id=con,path=/root/kvm smoke,,x/out/console.log",
		"local,id=fs1,path=/root/kvm smoke,,x,security_model=none,multidevs=remap,readonly=on",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %q:\n%q", want, args)
		}
	}
	cmdline := args[slices.Index(args, "-append")+1]
	for _, want := range []string{` init="/root/kvm smoke,x/out/bin/kvm-smoke" `, ` -- ` + GuestFlag + ` "/root/kvm smoke,x/out/bin/job.json"`} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("cmdline lacks %q: %s", want, cmdline)
		}
	}
	o.Job = `/root/a"b/job.json`
	if _, err := o.Args(); err == nil || !strings.Contains(err.Error(), "double quote") {
		t.Errorf("a double quote in the job's path: %v", err)
	}
}

// The outer kernel gets the host's TSC rate where the arch has a parameter
// for it, and does not calibrate its TSC against the PIT.
func TestOuterCmdlineTSCRate(t *testing.T) {
	for _, tc := range []struct {
		arch string
		khz  int64
		want string
	}{
		{"x86_64", 2600071, " tsc_early_khz=2600071 "},
		{"x86_64", 0, ""},
		{"arm64", 2600071, ""},
	} {
		c, err := Outer{Arch: mustArch(t, tc.arch), Init: "/o/bin/kvm-smoke", Job: "/o/bin/job.json", TSCkHz: tc.khz}.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(c, "tsc_early_khz"); got != (tc.want != "") || !strings.Contains(c, tc.want) {
			t.Errorf("%s at %d kHz: cmdline %q, want %q", tc.arch, tc.khz, c, tc.want)
		}
	}
}

// The probe's line opens what the boot's opens, and boots nothing.
func TestProbeArgs(t *testing.T) {
	o := Outer{Arch: mustArch(t, "x86_64"), Root: "/", Init: "/o/bin/kvm-smoke", Job: "/o/bin/job.json", CPUs: 1, MemoryMiB: 1024,
		Console: "/o/console.log", Shares: []Share{{Tag: "labout", Path: "/o"}}}
	args, err := o.ProbeArgs()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(args, "-kernel") || slices.Contains(args, "-append") {
		t.Errorf("probe boots a kernel: %q", args)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"path=/o,security_model=none", "file,id=con,path=/o/console.log", "-S -qmp stdio"} {
		if !strings.Contains(line, want) {
			t.Errorf("probe lacks %q: %s", want, line)
		}
	}
}
