package nested

import (
	"fmt"
	"strings"
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

// Outer is the outer guest's QEMU: TCG, with a CPU that offers SVM.
type Outer struct {
	QEMU      string // qemu-system-x86_64
	Kernel    string // the outer kernel (vmlinux: QEMU enters it by PVH)
	Init      string // the outer guest's PID 1: this program, on the host's root
	Job       string // the job file Init reads
	CPUs      int
	MemoryMiB int
	Console   string  // the serial console's log file
	Shares    []Share // writable shares besides the root
}

// Cmdline is the outer kernel's command line. Arguments after "--" go to
// init.
func (o Outer) Cmdline() string {
	return strings.Join([]string{
		"console=ttyS0", "8250.nr_uarts=1", "loglevel=6", "panic=-1",
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
	args := []string{
		// q35 and SeaBIOS: the guest gets DMI tables ("QEMU"), which lab
		// reads to say it runs nested.
		"-M", "q35",
		// max: under TCG, every feature TCG emulates, AMD's SVM with nested
		// paging (NPT) among them; TCG emulates no VMX.
		"-cpu", "max",
		"-accel", "tcg,thread=multi",
		"-smp", fmt.Sprint(o.CPUs),
		"-m", fmt.Sprintf("%dM", o.MemoryMiB),
		"-kernel", o.Kernel,
		"-append", o.Cmdline(),
		"-nodefaults", "-display", "none", "-no-reboot", "-nic", "none",
		"-chardev", "file,id=con,path=" + o.Console,
		"-serial", "chardev:con",
	}
	root := Share{Tag: RootTag, Path: "/", ReadOnly: true}
	for i, s := range append([]Share{root}, o.Shares...) {
		id := fmt.Sprintf("fs%d", i)
		// multidevs=remap: the host's root spans several file systems
		// (/proc, /sys, tmpfs), whose inode numbers would collide.
		fsdev := fmt.Sprintf("local,id=%s,path=%s,security_model=none,multidevs=remap", id, s.Path)
		if s.ReadOnly {
			fsdev += ",readonly=on"
		}
		args = append(args, "-fsdev", fsdev, "-device", fmt.Sprintf("virtio-9p-pci,fsdev=%s,mount_tag=%s", id, s.Tag))
	}
	return args, nil
}
