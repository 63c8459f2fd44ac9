package vm

import (
	"fmt"
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
}

// Host is what accelerator detection looks at; tests fill it in by hand.
type Host struct {
	GOARCH      string
	DevKVM      error  // result of opening /dev/kvm read-write
	CPUInfo     string // /proc/cpuinfo
	PVMLoaded   bool   // the kvm_pvm module (Pagetable-based VM) is loaded
	ForcedAccel string // --accel, empty for auto
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
			return Accel{}, fmt.Errorf("--accel kvm: KVM cannot run this guest: %s", why)
		}
		return Accel{Name: results.KVM, Reason: "asked for with --accel kvm"}, nil
	case results.TCG:
		return Accel{Name: results.TCG, Reason: "asked for with --accel tcg"}, nil
	case "":
	default:
		return Accel{}, fmt.Errorf("--accel %q: want kvm or tcg", h.ForcedAccel)
	}
	if kvmOK {
		return Accel{Name: results.KVM, Reason: why}, nil
	}
	return Accel{Name: results.TCG, Reason: why}, nil
}

func kvmUsable(h Host, a arch.Arch) (bool, string) {
	if a.GOARCH != h.GOARCH {
		return false, fmt.Sprintf("%s guest on a %s host: emulated", a.Name, h.GOARCH)
	}
	if h.DevKVM != nil {
		return false, fmt.Sprintf("/dev/kvm is not usable: %v", h.DevKVM)
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
