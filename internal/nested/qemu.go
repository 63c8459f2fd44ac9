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
}

// Cmdline is the outer kernel's command line. Arguments after "--" go to
// init.
func (o Outer) Cmdline() string {
	return strings.Join([]string{
		"console=" + o.Arch.Console, "loglevel=6", "panic=-1",
		// The host's root, read-only; metadata may be cached, since nothing
		// inside writes it.
		"root=" + RootTag, "rootfstype=9p", "rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose", "ro",
		"init=" + o.Init, "--", GuestFlag, o.Job,
	}, " ")
}

// Args is QEMU's command line (without the binary).
func (o Outer) Args() ([]string, error) {
	if o.CPUs < 1 || o.MemoryMiB < 256 {
		return nil, fmt.Errorf("outer guest of %d vCPUs and %d MiB: want at least 1 and 256", o.CPUs, o.MemoryMiB)
	}
	m, ok := outerMachines[o.Arch.Name]
	if !ok {
		return nil, fmt.Errorf("no outer guest for %q (known: x86_64, arm64)", o.Arch.Name)
	}
	args := append(append([]string{}, m.args...),
		"-accel", "tcg,thread=multi",
		"-smp", fmt.Sprint(o.CPUs),
		"-m", fmt.Sprintf("%dM", o.MemoryMiB),
		"-kernel", o.Kernel,
		"-append", o.Cmdline(),
		"-nodefaults", "-display", "none", "-no-reboot", "-nic", "none",
		"-chardev", "file,id=con,path="+o.Console,
		"-serial", "chardev:con",
	)
	root := Share{Tag: RootTag, Path: o.Root, ReadOnly: true}
	for i, s := range append([]Share{root}, o.Shares...) {
		id := fmt.Sprintf("fs%d", i)
		// multidevs=remap: the host's root spans several file systems
		// (/proc, /sys, tmpfs), whose inode numbers would collide.
		fsdev := fmt.Sprintf("local,id=%s,path=%s,security_model=none,multidevs=remap", id, s.Path)
		if s.ReadOnly {
			fsdev += ",readonly=on"
		}
		args = append(args, "-fsdev", fsdev, "-device", fmt.Sprintf("%s,fsdev=%s,mount_tag=%s", m.ninep, id, s.Tag))
	}
	return args, nil
}
