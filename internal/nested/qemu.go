package nested

import (
	"fmt"
	"strings"

	"lab/internal/arch"
)

// Share is a host folder the outer guest mounts over virtio-9p, at the same
// path, so that paths mean the same inside as outside.
type Share struct {
	Tag      string `json:"tag"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only"`
	Why      string `json:"why,omitempty"` // what the guest needs it for, for messages
}

// RootTag is the 9p tag of the host's root file system: the kernel mounts
// root=/dev/root with rootfstype=9p by that tag.
const RootTag = "/dev/root"

// outerMachines are the outer guest's machine and CPU per arch: under TCG,
// with what KVM needs of the CPU, and a virtio-9p transport its kernel has.
var outerMachines = map[string]struct {
	args  []string
	ninep string // the virtio-9p device
}{
	// q35 and SeaBIOS: the guest gets DMI tables ("QEMU"), which lab
	// reads to say it runs nested. -cpu max: under TCG, every feature TCG
	// emulates, AMD's SVM with nested paging (NPT) among them; TCG
	// emulates no VMX. Without XSAVE: the first nested run's inner
	// kernels (-cpu host of this KVM) warned at xstate.c:605 that the
	// XSAVE area CPUID 0xd gave (576 bytes) is not what the features it
	// offers need (832), which lab rightly counts as a kernel problem;
	// without XSAVE both kernels use FXSAVE, which the probes do not care about.
	"x86_64": {[]string{"-M", "q35", "-cpu", "max,-xsave"}, "virtio-9p-pci"},
	// virtualization=on: the CPU has EL2, where the kernel starts and
	// KVM runs. GICv3, whose virtualisation QEMU emulates, as lab's
	// guests use it. pauth-impdef: see arch.Arch.CPU.
	"arm64": {[]string{"-M", "virt,virtualization=on,gic-version=3", "-cpu", "max,pauth-impdef=on"}, "virtio-9p-device"},
}

// Outer is the outer guest's QEMU: TCG, with a CPU that offers
// virtualisation (SVM on x86_64, EL2 on arm64).
type Outer struct {
	Arch      arch.Arch
	QEMU      string // Arch.QEMU
	Kernel    string // the outer kernel (vmlinux: QEMU enters it by PVH)
	Init      string // the outer guest's PID 1: this program, on the host's root
	Job       string // the job file Init reads
	CPUs      int
	MemoryMiB int
	Console   string // the serial console's log file
	// Root is the host folder that is the guest's root, read-only: "/"
	// when the host can run the guest's programs.
	Root   string
	Shares []Share // shares besides the root
	// TSCkHz is the host's TSC rate, which a TCG guest's TSC runs at, given
	// to the kernel (Arch.TSCkHzParam) so that it does not calibrate its
	// TSC against the PIT: on a busy host that failed ("tsc: Unable to
	// calibrate against PIT"), and in those runs both inner boots hung once
	// their agent started measuring. 0 when unknown.
	TSCkHz int64
}

// Cmdline is the outer kernel's command line. Arguments after "--" go to
// init. Init and its job are paths of the host's (the output folder), which
// may hold spaces: those are quoted (see kernelWord).
func (o Outer) Cmdline() (string, error) {
	init, err := kernelWord(o.Init)
	if err != nil {
		return "", fmt.Errorf("the outer guest's init: %w", err)
	}
	job, err := kernelWord(o.Job)
	if err != nil {
		return "", fmt.Errorf("the outer guest's job: %w", err)
	}
	words := []string{
		"console=" + o.Arch.Console, "loglevel=6", "panic=-1",
		// The host's root, read-only; metadata may be cached, since nothing
		// inside writes it.
		"root=" + RootTag, "rootfstype=9p", "rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose", "ro",
	}
	if o.Arch.TSCkHzParam != "" && o.TSCkHz > 0 {
		words = append(words, fmt.Sprintf("%s=%d", o.Arch.TSCkHzParam, o.TSCkHz))
	}
	return strings.Join(append(words, "init="+init, "--", GuestFlag, job), " "), nil
}

// kernelWord is s as one word of the kernel's command line: the kernel
// splits it at spaces outside double quotes and drops the quotes
// (lib/cmdline.c's next_arg), so a word with a space is quoted. A double
// quote or a newline it cannot carry at all.
func kernelWord(s string) (string, error) {
	if strings.ContainsAny(s, "\"\n") {
		return "", fmt.Errorf("%q: the kernel's command line cannot carry a double quote or a newline", s)
	}
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`, nil
	}
	return s, nil
}

// qemuValue is s as the value of an option of QEMU's -fsdev, -device or
// -chardev, whose options are separated by commas: QEMU reads a doubled
// comma as one comma of the value.
func qemuValue(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// Args is QEMU's command line (without the binary).
func (o Outer) Args() ([]string, error) {
	if o.CPUs < 1 || o.MemoryMiB < 256 {
		return nil, fmt.Errorf("outer guest of %d vCPUs and %d MiB: want at least 1 and 256", o.CPUs, o.MemoryMiB)
	}
	m, ok := outerMachines[o.Arch.Name]
	if !ok {
		return nil, fmt.Errorf("no outer guest for %q (known: x86_64, arm64)", o.Arch.Name)
	}
	cmdline, err := o.Cmdline()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, m.args...),
		"-accel", "tcg,thread=multi",
		"-smp", fmt.Sprint(o.CPUs),
		"-m", fmt.Sprintf("%dM", o.MemoryMiB),
		"-kernel", o.Kernel,
		"-append", cmdline,
		"-nodefaults", "-display", "none", "-no-reboot", "-nic", "none",
		"-chardev", "file,id=con,path="+qemuValue(o.Console),
		"-serial", "chardev:con",
	)
	root := Share{Tag: RootTag, Path: o.Root, ReadOnly: true}
	for i, s := range append([]Share{root}, o.Shares...) {
		id := fmt.Sprintf("fs%d", i)
		// multidevs=remap: the host's root spans several file systems
		// (/proc, /sys, tmpfs), whose inode numbers would collide.
		fsdev := fmt.Sprintf("local,id=%s,path=%s,security_model=none,multidevs=remap", id, qemuValue(s.Path))
		if s.ReadOnly {
			fsdev += ",readonly=on"
		}
		args = append(args, "-fsdev", fsdev, "-device", fmt.Sprintf("%s,fsdev=%s,mount_tag=%s", m.ninep, id, s.Tag))
	}
	return args, nil
}

// ProbeArgs is QEMU's command line for a check that boots nothing: without
// the kernel, paused before the first instruction (-S), and with QMP on
// standard input to quit it. QEMU still opens every share's folder and the
// console, so it refuses a path it cannot open or that its option syntax
// mangles.
func (o Outer) ProbeArgs() ([]string, error) {
	args, err := o.Args()
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "-kernel" || args[i] == "-append" {
			i++ // and its value
			continue
		}
		out = append(out, args[i])
	}
	return append(out, "-S", "-qmp", "stdio"), nil
}
