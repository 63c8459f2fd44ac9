package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/topology"
)

func mustArch(t *testing.T, name string) arch.Arch {
	a, err := arch.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestChooseAccel(t *testing.T) {
	x86, arm := mustArch(t, "x86_64"), mustArch(t, "arm64")
	vmx := "processor\t: 0\nflags\t\t: fpu vme vmx sse\n"
	novmx := "processor\t: 0\nflags\t\t: fpu vme sse hypervisor\n"
	for _, tc := range []struct {
		name    string
		host    Host
		a       arch.Arch
		want    string
		wantErr bool
		reason  string
	}{
		{"real KVM", Host{GOARCH: "amd64", CPUInfo: vmx}, x86, results.KVM, false, "usable"},
		{"PVM kvm", Host{GOARCH: "amd64", CPUInfo: novmx, PVMLoaded: true}, x86, results.TCG, false, "kvm_pvm"},
		{"no vmx", Host{GOARCH: "amd64", CPUInfo: novmx}, x86, results.TCG, false, "no vmx/svm"},
		{"no /dev/kvm", Host{GOARCH: "amd64", CPUInfo: vmx, DevKVM: os.ErrNotExist}, x86, results.TCG, false, "not usable"},
		{"foreign arch", Host{GOARCH: "amd64", CPUInfo: vmx}, arm, results.TCG, false, "emulated"},
		{"arm64 host", Host{GOARCH: "arm64"}, arm, results.KVM, false, "usable"},
		{"forced tcg", Host{GOARCH: "amd64", CPUInfo: vmx, ForcedAccel: results.TCG}, x86, results.TCG, false, "--accel tcg"},
		{"forced kvm without it", Host{GOARCH: "amd64", CPUInfo: novmx, ForcedAccel: results.KVM}, x86, "", true, ""},
		{"forced nonsense", Host{GOARCH: "amd64", ForcedAccel: "hvf"}, x86, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseAccel(tc.host, tc.a)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got.Name != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("got %+v, want %s (%q)", got, tc.want, tc.reason)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	x86, arm := mustArch(t, "x86_64"), mustArch(t, "arm64")
	tcg, kvm := Accel{Name: results.TCG}, Accel{Name: results.KVM}
	base := func(a arch.Arch, cpus int, accel Accel, clock string) Config {
		return Config{Arch: a, Kernel: "/k/Image", Initrd: "/k/initrd.cpio",
			Shape: topology.Shape{CPUs: cpus, Sockets: 1, Clusters: 1, Cores: cpus, Threads: 1, MemoryMiB: 1024},
			Accel: accel, Clock: clock, Dir: "/r/boot1", QMPPath: "/tmp/q.sock",
			Job: protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, Samples: 5, WarmupSamples: 1}}
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		want    []string // consecutive argument pairs that must appear
		absent  []string
		wantErr string
	}{
		{"x86 tcg wall", func() Config { c := base(x86, 2, tcg, results.ClockWall); c.TSCkHz = 2445440; return c }(),
			[]string{"-M microvm,pcie=off,auto-kernel-cmdline=off", "-cpu max", "-accel tcg,thread=multi", "-smp 2,sockets=1,cores=2,threads=1", "-m 1024M", "-kernel /k/Image", "-serial chardev:con",
				"-chardev file,id=con,path=/r/boot1/console.log", "-chardev file,id=res,path=/r/boot1/results.jsonl",
				"-device virtio-serial-device,id=vser", "-device virtserialport,bus=vser.0,chardev=res,name=lab.results", "-qmp unix:/tmp/q.sock,server=on,wait=off"},
			[]string{"-icount", "-global", "q35", "virtio-serial-pci"}, ""},
		// Without its TSC rate a TCG guest calibrates the TSC, which
		// microvm has no timer for: q35.
		{"x86 tcg wall, TSC rate unknown", base(x86, 2, tcg, results.ClockWall),
			[]string{"-M q35,sata=off,smbus=off,i8042=off,vmport=off", "-device virtio-serial-pci,id=vser"}, []string{"microvm", "tsc_early_khz"}, ""},
		{"x86 numa", func() Config {
			c := base(x86, 2, tcg, results.ClockWall)
			c.Shape.Sockets, c.Shape.Cores = 2, 1
			c.Shape.Nodes = []topology.Node{{CPUs: []int{0}, MemoryMiB: 512}, {CPUs: []int{1}, MemoryMiB: 512}}
			return c
		}(), []string{"-M q35,sata=off,smbus=off,i8042=off,vmport=off", "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off", "-cpu max", "-device virtio-serial-pci,id=vser"},
			[]string{"microvm"}, ""},
		// A comma in a path ends QEMU's option unless doubled.
		{"a comma in the run folder", func() Config {
			c := base(x86, 2, tcg, results.ClockWall)
			c.Dir, c.QMPPath = "/r/a,b/boot1", "/t/a,b/q.sock"
			return c
		}(), []string{"-chardev file,id=con,path=/r/a,,b/boot1/console.log", "-chardev file,id=res,path=/r/a,,b/boot1/results.jsonl",
			"-qmp unix:/t/a,,b/q.sock,server=on,wait=off"}, nil, ""},
		{"arm64 tcg", base(arm, 4, tcg, results.ClockWall),
			[]string{"-M virt,gic-version=3", "-cpu max,pauth-impdef=on", "-smp 4,sockets=1,cores=4,threads=1", "-device virtio-serial-device,id=vser"},
			[]string{"virtio-serial-pci"}, ""},
		{"icount", base(x86, 1, tcg, results.ClockICount),
			[]string{"-M q35,sata=off,smbus=off,i8042=off,vmport=off", "-accel tcg,thread=single", "-icount shift=0,sleep=off", "-smp 1,sockets=1,cores=1,threads=1", "-device virtio-serial-pci,id=vser"},
			[]string{"tcg,thread=multi", "microvm"}, ""},
		// Every boot of one image the same to the last digit: a fixed seed
		// and RTC, and virtio handled in the guest's instruction stream.
		{"icount held deterministic", base(x86, 1, tcg, results.ClockICount),
			[]string{"-seed 1", "-rtc base=2024-01-01T00:00:00,clock=vm", "-global virtio-pci.ioeventfd=off"}, nil, ""},
		{"arm64 icount held deterministic", base(arm, 1, tcg, results.ClockICount),
			[]string{"-seed 1", "-rtc base=2024-01-01T00:00:00,clock=vm", "-global virtio-mmio.ioeventfd=off"}, nil, ""},
		{"wall clock left as it is", base(arm, 2, tcg, results.ClockWall), nil, []string{"-seed", "-rtc", "ioeventfd"}, ""},
		{"kvm", base(x86, 8, kvm, results.ClockWall), []string{"-M microvm,pcie=off,auto-kernel-cmdline=off", "-cpu host", "-accel kvm"}, []string{"-cpu max", "tcg"}, ""},
		{"firmware", func() Config { c := base(x86, 1, tcg, results.ClockICount); c.Firmware = "/q/qboot.rom"; return c }(),
			[]string{"-bios /q/qboot.rom"}, nil, ""},
		{"default firmware", base(x86, 1, tcg, results.ClockICount), nil, []string{"-bios"}, ""},
		{"icount with 2 vCPUs", base(x86, 2, tcg, results.ClockICount), nil, nil, "only 1 vCPU"},
		{"icount under kvm", base(x86, 1, kvm, results.ClockICount), nil, nil, "icount needs TCG"},
		{"zero vCPUs", base(x86, 0, tcg, results.ClockWall), nil, nil, "at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := tc.cfg.Args()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			joined := " " + strings.Join(args, " ") + " "
			for _, w := range tc.want {
				if !strings.Contains(joined, " "+w+" ") {
					t.Errorf("args lack %q:\n%s", w, joined)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(joined, a) {
					t.Errorf("args have %q:\n%s", a, joined)
				}
			}
			i := slices.Index(args, "-append")
			job, err := protocol.DecodeCmdline(args[i+1])
			if err != nil || job.Samples != 5 || job.Benchmarks[0] != "uprobe-nop" {
				t.Errorf("job on the command line: %+v, %v", job, err)
			}
			if !strings.Contains(args[i+1], "console="+tc.cfg.Arch.Console) {
				t.Errorf("cmdline %q lacks the console", args[i+1])
			}
		})
	}
}

func TestReadRecordsKeepsAllButATornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.jsonl")
	os.WriteFile(p, []byte(`{"type":"hello","hello":{"release":"6.12.117"}}
{"type":"result","result":{"benchmark":"uprobe-nop","producers":1,"samples":[{"interval_ns":1000000000,"hits":5,"rate":5}]}}
{"type":"resu`), 0o644)
	recs, err := ReadRecords(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Result.Samples[0].Hits != 5 {
		t.Fatalf("records = %+v", recs)
	}
	if recs, err := ReadRecords(filepath.Join(t.TempDir(), "none")); err != nil || recs != nil {
		t.Fatalf("missing file: %v %v", recs, err)
	}
}

func TestBootErrorQuotesConsole(t *testing.T) {
	dir := t.TempDir()
	c := Config{Dir: dir}
	os.WriteFile(c.ConsoleLog(), []byte("line 1\r\nKernel panic - not syncing: VFS: Unable to mount root fs\r\n"), 0o644)
	err := c.bootError(results.FailPanic, "kernel panic")
	var be *BootError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "Unable to mount root fs") || strings.Contains(err.Error(), "\r") {
		t.Fatalf("error = %q", err)
	}
	if results.FailureKind(err) != results.FailPanic || !results.KernelFault(results.FailureKind(err)) {
		t.Errorf("kind %q", results.FailureKind(err))
	}
}

// vm's errors carry their kind to results.json: kernel failures and
// infrastructure failures are told apart, and so is an interruption: a
// bisect skips the first, stops on the second.
func TestFailureKind(t *testing.T) {
	for _, tc := range []struct {
		err    error
		kind   string
		kernel bool
	}{
		{&BootError{Kind: results.FailHang}, results.FailHang, true},
		{fmt.Errorf("boot 3: %w", &BootError{Kind: results.FailProblem}), results.FailProblem, true},
		{infra("start qemu-system-x86_64", os.ErrNotExist), results.FailInfra, false},
		{fmt.Errorf("boot interrupted: %w", context.Canceled), results.FailInterrupt, false},
		{errors.New("something else"), results.FailInfra, false},
		{nil, "", false},
	} {
		if got := results.FailureKind(tc.err); got != tc.kind || results.KernelFault(got) != tc.kernel {
			t.Errorf("Kind(%v) = %q (kernel's fault %v)", tc.err, got, results.KernelFault(got))
		}
	}
	var ie *InfraError
	if err := infra("start", os.ErrNotExist); !errors.As(err, &ie) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("InfraError does not unwrap: %v", err)
	}
}

// QEMU that cannot start is an infrastructure failure, not the kernel's.
func TestBootWithoutQEMUIsInfra(t *testing.T) {
	a := mustArch(t, "x86_64")
	a.QEMU = "/nonexistent/qemu-system-x86_64"
	dir := t.TempDir()
	shape, err := topology.Resolve(a.Name, topology.Request{CPUs: 1, Memory: "256M"})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Arch: a, Kernel: "k", Initrd: "i", Shape: shape, Accel: Accel{Name: results.TCG}, Clock: results.ClockWall,
		Dir: dir, QMPPath: filepath.Join(dir, "q.sock")}
	_, err = Boot(context.Background(), c, time.Second, nil)
	if results.FailureKind(err) != results.FailInfra {
		t.Fatalf("err = %v, kind %q", err, results.FailureKind(err))
	}
}

// lpj= and the TSC rate both rest on a TCG guest's TSC being the host's:
// not under icount, not under KVM, not on arm64.
func TestHostTSCParamsOnlyForX86WallTCG(t *testing.T) {
	x86, arm := mustArch(t, "x86_64"), mustArch(t, "arm64")
	for _, tc := range []struct {
		a     arch.Arch
		accel string
		clock string
		want  bool
	}{
		{x86, results.TCG, results.ClockWall, true},
		{x86, results.TCG, results.ClockICount, false},
		{x86, results.KVM, results.ClockWall, false},
		{arm, results.TCG, results.ClockWall, false},
	} {
		c := Config{Arch: tc.a, Accel: Accel{Name: tc.accel}, Clock: tc.clock, LPJ: 9200000, TSCkHz: 2300000}
		line, err := c.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		for _, param := range []string{"lpj=9200000", "tsc_early_khz=2300000"} {
			if got := strings.Contains(line, " "+param+" "); got != tc.want {
				t.Errorf("%s %s %s: %s on the command line %v, want %v", tc.a.Name, tc.accel, tc.clock, param, got, tc.want)
			}
		}
	}
}

func TestHostTSC(t *testing.T) {
	khz, ok := HostTSCkHz()
	if runtime.GOARCH != "amd64" {
		if ok {
			t.Errorf("a TSC rate on %s", runtime.GOARCH)
		}
		return
	}
	// Any x86 TSC of the last 20 years runs between 500 MHz and 10 GHz.
	if !ok || khz < 500_000 || khz > 10_000_000 {
		t.Errorf("host TSC %d kHz", khz)
	}
}

func TestOversubscribedTCGWaitsLongerForRCU(t *testing.T) {
	x86 := mustArch(t, "x86_64")
	for _, over := range []bool{false, true} {
		c := Config{Arch: x86, Accel: Accel{Name: results.TCG}, Clock: results.ClockWall, Oversubscribed: over}
		line, err := c.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(line, "rcupdate.rcu_cpu_stall_timeout=300"); got != over {
			t.Errorf("oversubscribed %v: stall timeout on the command line %v", over, got)
		}
	}
}

// The arch's own kernel parameters describe its machine (one UART on
// x86_64's q35), so every guest gets them, whatever runs it.
// Every guest gets its arch's kernel parameters; the TCG-only ones
// (no_timer_check, tsc=reliable) reach every TCG guest, icount included, and
// no KVM guest: under KVM the kernel picks its own.
func TestArchCmdlineOnEveryGuest(t *testing.T) {
	x86 := mustArch(t, "x86_64")
	if len(x86.Cmdline) == 0 {
		t.Fatal("x86_64 has no kernel parameters of its own")
	}
	if len(x86.TCGCmdline) == 0 {
		t.Fatal("x86_64 has no TCG kernel parameters")
	}
	for _, tc := range []struct {
		accel, clock string
		tcg          bool
	}{{results.TCG, results.ClockWall, true}, {results.TCG, results.ClockICount, true}, {results.KVM, results.ClockWall, false}} {
		c := Config{Arch: x86, Accel: Accel{Name: tc.accel}, Clock: tc.clock}
		line, err := c.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		has := func(p string) bool { return strings.Contains(" "+line+" ", " "+p+" ") }
		for _, p := range x86.Cmdline {
			if !has(p) {
				t.Errorf("%s %s: %q lacks %s", tc.accel, tc.clock, line, p)
			}
		}
		for _, p := range x86.TCGCmdline {
			if got := has(p); got != tc.tcg {
				t.Errorf("%s %s: %s on %q is %v, want %v", tc.accel, tc.clock, p, line, got, tc.tcg)
			}
		}
	}
}

// The console prints warnings and worse (what the console scan looks for),
// everything only when a lab expects KERN_INFO lines (KUnit): printing to
// the emulated UART costs boot time.
func TestConsoleLevel(t *testing.T) {
	x86 := mustArch(t, "x86_64")
	for _, verbose := range []bool{false, true} {
		c := Config{Arch: x86, Accel: Accel{Name: results.TCG}, Clock: results.ClockWall, Verbose: verbose}
		line, err := c.Cmdline()
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "loglevel=5", true: "loglevel=7"}[verbose]
		if !strings.Contains(line, want) {
			t.Errorf("verbose %v: %q lacks %s", verbose, line, want)
		}
	}
}

// The arch's firmware is used only where its QEMU has it: a QEMU without
// qboot.rom (or no QEMU at all) boots with its default firmware.
func TestFindFirmware(t *testing.T) {
	with, without := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(with, "qboot.rom"), []byte("rom"), 0o644)
	os.Mkdir(filepath.Join(without, "qboot.rom"), 0o755) // not a file
	fake := func(dirs ...string) string {
		p := filepath.Join(t.TempDir(), "qemu")
		os.WriteFile(p, []byte("#!/bin/sh\n[ \"$1 $2\" = \"-L help\" ] || exit 1\nprintf '%s\\n' "+strings.Join(dirs, " ")+"\n"), 0o755)
		return p
	}
	for _, tc := range []struct {
		name, qemu, firmware, want string
	}{
		{"found", fake(without, with), "qboot.rom", filepath.Join(with, "qboot.rom")},
		{"not there", fake(without), "qboot.rom", ""},
		{"no qemu", filepath.Join(t.TempDir(), "missing"), "qboot.rom", ""},
		{"machine wants the default", fake(with), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FindFirmware(tc.qemu, tc.firmware); got != tc.want {
				t.Errorf("FindFirmware = %q, want %q", got, tc.want)
			}
		})
	}
}

// A run's -bios is its machine's: q35's qboot.rom where QEMU has it,
// microvm's own default (QEMU's qboot build for it).
func TestFirmwarePath(t *testing.T) {
	x86 := mustArch(t, "x86_64")
	q35, microvm := x86.MachineFor(arch.Needs{NUMA: true}), x86.MachineFor(arch.Needs{})
	h := Host{Firmware: map[string]string{FirmwareKey(x86, q35): "/q/qboot.rom"}}
	if got := h.FirmwarePath(x86, q35); got != "/q/qboot.rom" {
		t.Errorf("q35: %q", got)
	}
	if got := h.FirmwarePath(x86, microvm); got != "" {
		t.Errorf("microvm: %q, want QEMU's default", got)
	}
	if got := (Host{}).FirmwarePath(x86, q35); got != "" {
		t.Errorf("q35 on a QEMU without qboot.rom: %q", got)
	}
}

// TestStartWithoutTHP starts a real process the way QEMU is started and
// reads back, from the child's own /proc status, whether it may use
// transparent huge pages: off for TCG guests, on otherwise, and lab's own
// flag left as it was.
func TestStartWithoutTHP(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil || !strings.Contains(string(status), "THP_enabled:") {
		t.Skip("this kernel does not report THP_enabled in /proc/PID/status")
	}
	if v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); err != nil || v != 0 {
		t.Skip("the test process itself runs without transparent huge pages")
	}
	for _, tc := range []struct {
		noTHP bool
		want  string
	}{{true, "THP_enabled:\t0"}, {false, "THP_enabled:\t1"}} {
		var stderr bytes.Buffer
		_, exited, thpOff, err := startQEMU("sh", []string{"-c", "grep THP_enabled /proc/self/status >&2"}, &stderr, tc.noTHP)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-exited; err != nil {
			t.Fatalf("noTHP=%v: %v", tc.noTHP, err)
		}
		if thpOff != tc.noTHP {
			t.Errorf("noTHP=%v: reported thpOff=%v", tc.noTHP, thpOff)
		}
		if got := strings.TrimSpace(stderr.String()); got != tc.want {
			t.Errorf("noTHP=%v: child says %q, want %q", tc.noTHP, got, tc.want)
		}
		if v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0); err != nil || v != 0 {
			t.Errorf("noTHP=%v: lab's own THP-disable flag is %d (%v) afterwards, want 0", tc.noTHP, v, err)
		}
	}
}
