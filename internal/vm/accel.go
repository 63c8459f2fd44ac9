package vm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"lab/internal/arch"
	"lab/internal/results"
)

// Accel is the accelerator a guest runs under, and why it was chosen.
type Accel struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// Nested, for a KVM guest of a host that is itself a VM, says which
	// (Host.InVM): the guest is nested, and its figures are the outer
	// hypervisor's as much as the CPU's. "" on bare metal, and under TCG,
	// where the host being a VM changes nothing lab can say.
	Nested string `json:"nested,omitempty"`
}

// Caveat is the line a nested KVM guest's reports carry, "" when the guest
// is not nested.
func (a Accel) Caveat() string {
	if a.Nested == "" {
		return ""
	}
	return "nested KVM: lab ran inside " + a.Nested + "; the figures are the outer VM's, not the hardware's"
}

// Host is what accelerator detection looks at; tests fill it in by hand.
type Host struct {
	GOARCH      string
	DevKVM      error  // result of opening /dev/kvm read-write
	CPUInfo     string // /proc/cpuinfo
	PVMLoaded   bool   // the kvm_pvm module (Pagetable-based VM) is loaded
	ForcedAccel string // --accel, empty for auto
	// What says whether this host is itself a VM (see InVM): the DMI
	// vendor and product (/sys/class/dmi/id), the clock sources the kernel
	// offers, and the device tree's root compatible (arm64 without ACPI).
	DMIVendor, DMIProduct string
	Clocksources          string
	DTCompatible          string
	// Firmware is where each machine's -bios file (arch.Machine.Firmware)
	// is in its QEMU's data directories, "" when QEMU has none; keyed by
	// FirmwareKey.
	Firmware map[string]string
}

// FirmwareKey keys Host.Firmware: the arch (its QEMU) and the file.
func FirmwareKey(a arch.Arch, m arch.Machine) string { return a.Name + "/" + m.Firmware }

// FirmwarePath is the -bios file of machine m of arch a on this host, ""
// for QEMU's default.
func (h Host) FirmwarePath(a arch.Arch, m arch.Machine) string {
	if m.Firmware == "" {
		return ""
	}
	return h.Firmware[FirmwareKey(a, m)]
}

// ReadHost looks at this machine.
func ReadHost(forced string) Host {
	h := Host{GOARCH: runtime.GOARCH, ForcedAccel: forced}
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		h.DevKVM = err
	} else {
		f.Close()
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUInfo = string(b)
	}
	_, err := os.Stat("/sys/module/kvm_pvm")
	h.PVMLoaded = err == nil
	h.DMIVendor = readTrimmed("/sys/class/dmi/id/sys_vendor")
	h.DMIProduct = readTrimmed("/sys/class/dmi/id/product_name")
	h.Clocksources = readTrimmed("/sys/devices/system/clocksource/clocksource0/available_clocksource")
	// Strings separated by NULs: "linux,dummy-virt" is QEMU's virt.
	h.DTCompatible = strings.TrimSpace(strings.ReplaceAll(readTrimmed("/proc/device-tree/compatible"), "\x00", " "))
	h.Firmware = map[string]string{}
	for _, name := range arch.Names() {
		a, _ := arch.Lookup(name)
		for _, m := range a.Machines {
			if m.Firmware != "" {
				h.Firmware[FirmwareKey(a, m)] = FindFirmware(a.QEMU, m.Firmware)
			}
		}
	}
	return h
}

// readTrimmed is a small sysfs or procfs file's content, "" when it cannot
// be read (no DMI table, no device tree).
func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// dmiVMs are DMI system vendors and products of VMs, as systemd-detect-virt
// knows them: a substring of the vendor or product, and the VM it names.
var dmiVMs = []struct{ match, name string }{
	{"QEMU", "a QEMU guest"},
	{"KVM", "a KVM guest"},
	{"VMware", "a VMware guest"},
	{"VirtualBox", "a VirtualBox guest"},
	{"innotek", "a VirtualBox guest"},
	{"Xen", "a Xen guest"},
	{"Microsoft Corporation", "a Hyper-V guest"},
	{"Amazon EC2", "an Amazon EC2 instance"},
	{"Google", "a Google Compute Engine VM"},
	{"Parallels", "a Parallels guest"},
	{"Bochs", "a Bochs guest"},
}

// InVM says which VM this host is, "" when nothing says it is one. The
// CPU's hypervisor flag (x86) says there is one; DMI (or, on arm64 without
// ACPI, the device tree) says whose; KVM's paravirtual clock says a QEMU
// guest runs under KVM, and its absence on x86 that it runs under TCG,
// which has none to offer.
func (h Host) InVM() string {
	name := ""
	for _, v := range dmiVMs {
		if strings.Contains(h.DMIVendor, v.match) || strings.Contains(h.DMIProduct, v.match) {
			name = v.name
			break
		}
	}
	if name == "" && strings.Contains(h.DTCompatible, "linux,dummy-virt") {
		name = "a QEMU guest"
	}
	hyper := cpuFlag(h.CPUInfo, "hypervisor")
	kvmClock := strings.Contains(h.Clocksources, "kvm-clock")
	switch {
	case name == "a QEMU guest" && kvmClock:
		return "a QEMU guest under KVM (kvm-clock)"
	case name == "a QEMU guest" && hyper:
		// x86: KVM always offers its clock to QEMU's guests; TCG cannot.
		return "a QEMU guest under TCG (no kvm-clock)"
	case name != "":
		return name
	case kvmClock:
		return "a KVM guest (kvm-clock)"
	case hyper:
		return "a VM (the CPU's hypervisor flag)"
	}
	return ""
}

// FindFirmware is the path of file in the data directories qemu searches
// (qemu -L help), or "" when there is none or QEMU is missing: the guest
// then boots with QEMU's default firmware.
func FindFirmware(qemu, file string) string {
	if file == "" {
		return ""
	}
	out, err := exec.Command(qemu, "-L", "help").Output()
	if err != nil {
		return ""
	}
	for _, dir := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p := filepath.Join(strings.TrimSpace(dir), file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return filepath.Clean(p)
		}
	}
	return ""
}

// ChooseAccel picks KVM only when it can really run a stock kernel of arch:
// same architecture, /dev/kvm usable, and (on x86) hardware virtualisation
// flags present. A /dev/kvm backed by PVM (no vmx/svm) runs stock kernels by
// instruction emulation and hangs them, so it counts as unusable.
func ChooseAccel(h Host, a arch.Arch) (Accel, error) {
	kvmOK, why := kvmUsable(h, a)
	switch h.ForcedAccel {
	case results.KVM:
		if !kvmOK {
			return Accel{}, fmt.Errorf("--accel kvm: KVM cannot run this %s guest: %s", a.Name, why)
		}
		return nested(h, Accel{Name: results.KVM, Reason: "asked for with --accel kvm"}), nil
	case results.TCG:
		return Accel{Name: results.TCG, Reason: "asked for with --accel tcg"}, nil
	case "":
	default:
		return Accel{}, fmt.Errorf("--accel %q: want kvm or tcg", h.ForcedAccel)
	}
	if kvmOK {
		return nested(h, Accel{Name: results.KVM, Reason: why}), nil
	}
	return Accel{Name: results.TCG, Reason: why}, nil
}

// nested marks a KVM accelerator of a host that is itself a VM.
func nested(h Host, a Accel) Accel {
	if a.Nested = h.InVM(); a.Nested != "" {
		a.Reason += "; nested: lab runs inside " + a.Nested
	}
	return a
}

func kvmUsable(h Host, a arch.Arch) (bool, string) {
	if a.GOARCH != h.GOARCH {
		return false, fmt.Sprintf("%s guest on an %s host: emulated", a.Name, h.GOARCH)
	}
	if h.DevKVM != nil {
		return false, devKVMProblem(h)
	}
	if len(a.KVMFlags) > 0 && !anyFlag(h.CPUInfo, a.KVMFlags) {
		pvm := ""
		if h.PVMLoaded {
			pvm = " (kvm_pvm is loaded: a PVM /dev/kvm, which hangs stock kernels)"
		}
		return false, fmt.Sprintf("/dev/kvm exists but the CPU has no %s flag%s", strings.Join(a.KVMFlags, "/"), pvm)
	}
	return true, "/dev/kvm usable with hardware virtualisation"
}

// devKVMProblem says why /dev/kvm cannot be opened, and what would fix it.
func devKVMProblem(h Host) string {
	switch {
	case errors.Is(h.DevKVM, fs.ErrNotExist):
		why := "/dev/kvm is not usable: there is none (the kernel has no KVM: CONFIG_KVM, or the kvm_intel/kvm_amd module not loaded"
		if vm := h.InVM(); vm != "" {
			why += fmt.Sprintf("; or this host, %s, is not offered nested virtualisation", vm)
		}
		return why + ")"
	case errors.Is(h.DevKVM, fs.ErrPermission):
		return "/dev/kvm is not usable: this user may not open it (add the user to the kvm group, or run as root)"
	}
	return fmt.Sprintf("/dev/kvm is not usable: %v", h.DevKVM)
}

func anyFlag(cpuinfo string, flags []string) bool {
	for _, f := range flags {
		if cpuFlag(cpuinfo, f) {
			return true
		}
	}
	return false
}

func cpuFlag(cpuinfo, flag string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, f := range strings.Fields(v) {
			if f == flag {
				return true
			}
		}
		return false
	}
	return false
}

// HostCPUModel is the host's CPU model name, for provenance.
func HostCPUModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (strings.TrimSpace(k) == "model name" || strings.TrimSpace(k) == "CPU part") {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
