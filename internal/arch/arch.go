// Package arch describes the guest architectures lab can build and boot. It
// is the one place where x86_64 and arm64 differ: how the kernel is built,
// how QEMU runs it, what the host needs installed, and what TCG needs to
// boot it quickly. Adding an architecture is one entry here plus its config
// fragment, kernel-config/<name>.config.
package arch

import (
	"debug/elf"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Arch is one guest architecture.
type Arch struct {
	Name   string // lab's name: "x86_64", "arm64"
	GOARCH string // for the guest agent
	// Multiarch is Debian's triplet for the arch: a guest program's shared
	// libraries are in /lib/<Multiarch> and /usr/lib/<Multiarch>.
	Multiarch    string
	ELFMachine   elf.Machine // e_machine of the guest's programs
	DebianArch   string      // dpkg's name for the arch: a guest program's packages
	MakeArch     string      // ARCH= for kbuild
	CrossCompile string      // CROSS_COMPILE= prefix when not building natively
	CrossPackage string      // Debian package of the cross-compiler
	ImageTarget  string      // make target producing the boot image
	ImagePath    string      // image path relative to the O= build directory
	QEMU         string      // qemu-system binary
	QEMUPackage  string      // Debian package of QEMU
	CPU          string      // -cpu model under TCG; KVM guests get -cpu host
	// Machines are the QEMU machine types guests boot on; a guest boots on
	// the first that suits it (MachineFor). The last suits every guest.
	Machines []Machine
	Console  string // kernel console device
	// Cmdline are kernel parameters every guest of this arch gets.
	Cmdline []string
	// SyscallPrefix starts the kernel symbol of every syscall entry, e.g.
	// "__x64_sys_": kprobe benchmarks attach to Syscall("getpgid").
	SyscallPrefix string
	// MaxCPUs is how many vCPUs lab can boot: the smaller of the machine
	// type's limit in QEMU and the guest kernel's CONFIG_NR_CPUS=256
	// (kernel-config/<name>.config).
	MaxCPUs int
	// Clusters: the machine type has CPU clusters (-smp clusters=).
	Clusters bool
	// KVMFlags are /proc/cpuinfo flags of which one must be present for
	// KVM to run a stock kernel (empty: /dev/kvm alone is enough).
	KVMFlags []string
	// TCGBootPerCPU is how long a TCG guest may take to bring up each vCPU
	// (measured here on 2 host cores, with wide margins).
	TCGBootPerCPU time.Duration
	// TCGCmdline are kernel parameters every TCG guest gets.
	TCGCmdline []string
	// ICountCmdline are kernel parameters of guests on QEMU's instruction
	// clock, where every instruction of the boot is boot time.
	ICountCmdline []string
	// OversubscribedSingleThread runs TCG guests with more vCPUs than the
	// host has CPUs in one host thread (thread=single) rather than a
	// thread per vCPU.
	OversubscribedSingleThread bool
	// TSCDelayLoop: delays count TSC cycles and a TCG guest's TSC is the
	// host's, so lpj= can be computed from the host's TSC rate (see
	// vm.Config.LPJ).
	TSCDelayLoop bool
	// TSCkHzParam is the kernel parameter that gives a guest its TSC rate in
	// kHz, so that it does not calibrate the TSC against a slower timer at
	// boot: under TCG the guest's TSC is the host's, whose rate lab
	// measures ("" where the arch has no such parameter).
	TSCkHzParam string
	// StarvedLines match console lines by which the guest says a boot-time
	// calibration against its own clocks came out absurd because its vCPU
	// did not run: the host starved it. vm stops such a boot as
	// results.FailStarved; it measures nothing of the kernel, and
	// testbed's Booter boots it again.
	StarvedLines []string
}

// Machine is one QEMU machine type, with what goes with it.
type Machine struct {
	// Args are -M with its options, and -global settings.
	Args []string
	// ResultsBus is the virtio-serial device the agent's results port sits
	// on: virtio-serial-pci on a PCI machine, virtio-serial-device on
	// virtio-mmio.
	ResultsBus string
	// Transport is the QEMU type of the results bus's virtio transport
	// (virtio-pci or virtio-mmio): the type whose properties reach it
	// through -global.
	Transport string
	// Firmware is the -bios file, from QEMU's data directories, that
	// starts the guest's -kernel; "" keeps QEMU's default. When QEMU has no
	// such file, its default is used (vm.FindFirmware).
	Firmware string
	// NUMA: the machine describes NUMA nodes to the guest.
	NUMA bool
	// ICount: guests on QEMU's instruction clock boot on it (the arch's
	// ICountCmdline relies on its timers).
	ICount bool
	// CalibratesTSC: the kernel can calibrate its TSC against the
	// machine's timers. Without, a TCG guest must be given its TSC rate
	// (TSCkHzParam) or it hangs at boot.
	CalibratesTSC bool
}

// Needs are what a guest asks of its machine.
type Needs struct {
	NUMA          bool // it has NUMA nodes
	ICount        bool // it runs on QEMU's instruction clock
	CalibratesTSC bool // it calibrates its TSC at boot (TCG, its rate not given)
}

// Name is the machine type, as -M names it.
func (m Machine) Name() string {
	for i := 0; i+1 < len(m.Args); i++ {
		if m.Args[i] == "-M" {
			name, _, _ := strings.Cut(m.Args[i+1], ",")
			return name
		}
	}
	return ""
}

// MachineFor is the machine a guest boots on: the arch's first that has
// what the guest needs.
func (a Arch) MachineFor(n Needs) Machine {
	for _, m := range a.Machines {
		if (m.NUMA || !n.NUMA) && (m.ICount || !n.ICount) && (m.CalibratesTSC || !n.CalibratesTSC) {
			return m
		}
	}
	return a.Machines[len(a.Machines)-1]
}

var all = map[string]Arch{
	"x86_64": {
		Name:       "x86_64",
		GOARCH:     "amd64",
		Multiarch:  "x86_64-linux-gnu",
		ELFMachine: elf.EM_X86_64,
		DebianArch: "amd64",
		MakeArch:   "x86_64",
		// vmlinux, not bzImage: QEMU loads the ELF itself through its PVH
		// entry point (CONFIG_PVH, kernel-config/x86_64.config), so the
		// guest does not first decompress a bzImage and run the real-mode
		// set-up code. Measured here, 12 alternating 2-vCPU boots: boot to
		// agent 1.70 -> 1.55 s (QEMU's CPU time 1.95 -> 1.83 s).
		ImageTarget: "vmlinux",
		ImagePath:   "vmlinux",
		QEMU:        "qemu-system-x86_64",
		QEMUPackage: "qemu-system-x86",
		CPU:         "max",
		Machines: []Machine{
			// microvm: no PCI, no chipset, a few lines of ACPI (the CPUs,
			// the virtio-mmio devices, power-off), and its own qboot as
			// firmware. q35's ACPI alone was 148 ms of a 2-vCPU boot
			// (acpi_init, with PCI enumeration). Measured here through lab
			// (bench/boot-ab against q35, boot to the agent, medians): 2
			// vCPUs 1.52 -> 1.25 s (10 rounds), 16 vCPUs 3.08 -> 3.00 s
			// (per-round -0.31 s, 6 rounds); 96 vCPUs 25.8 -> 24.1 s (one
			// boot each). It describes no NUMA nodes, and has no HPET: none
			// for noapictimer's ticks under icount, and none to calibrate
			// the TSC against (its PIT fails it under TCG, and the guest
			// then hangs at boot), so TCG guests boot on it only when lab
			// gives them their TSC rate.
			// auto-kernel-cmdline=off: the guest finds its virtio-mmio
			// devices in the ACPI tables, and its command line is the one
			// lab built and recorded.
			{Args: []string{"-M", "microvm,pcie=off,auto-kernel-cmdline=off"}, ResultsBus: "virtio-serial-device", Transport: "virtio-mmio"},
			// q35 without the devices no guest here uses (SATA, SMBus, the
			// PS/2 controller, VMware's I/O port) and without ACPI PCI
			// hotplug (its AML, for 32 slots, is parsed at every boot):
			// every probe and table is code TCG translates once per boot.
			// Measured here at 2 vCPUs, 6 alternating boots with the lab's
			// QEMU line: boot to agent 1.77 -> 1.47 s (QEMU's CPU time 2.10
			// -> 1.73 s).
			{Args: []string{"-M", "q35,sata=off,smbus=off,i8042=off,vmport=off",
				"-global", "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off"},
				ResultsBus: "virtio-serial-pci", Transport: "virtio-pci", NUMA: true, ICount: true, CalibratesTSC: true,
				// qboot, QEMU's minimal firmware for -kernel, instead of
				// SeaBIOS: measured here through lab run (QEMU start to the
				// agent's first record, 4 boots each) 2.31 s -> 1.72 s at 1
				// vCPU under icount, 1.40 s -> 1.34 s at 2 vCPUs. SeaBIOS's
				// PCI scan and option ROMs are all code TCG runs once,
				// translating as it goes.
				Firmware: "qboot.rom"},
		},
		// One UART probed instead of 4.
		Cmdline: []string{"8250.nr_uarts=1"},
		Console: "ttyS0",
		// q35 stops at 255 under TCG: more needs x2APIC IDs, which QEMU 7.2
		// only offers with KVM's in-kernel irqchip; one limit for both
		// accelerators keeps a lab file valid on every host.
		MaxCPUs:       255,
		SyscallPrefix: "__x64_sys_",
		KVMFlags:      []string{"vmx", "svm"},
		// Measured: about 3.5 s per vCPU at 96 vCPUs before lpj=.
		TCGBootPerCPU: 8 * time.Second,
		// TCG has no stable TSC to calibrate against; don't fall back to
		// slow clocksources on a long run.
		// no_timer_check: the kernel's test that the PIT's interrupt
		// reaches the IO-APIC busy-waits for five ticks reading the TSC,
		// and under TCG every rdtsc ends a translation block (under icount
		// 12 ms of guest time took 0.6 s). QEMU's route works; KVM guests
		// skip the test themselves (arch/x86/kernel/kvm.c). Measured here,
		// alternating boots to the agent: 1 vCPU icount 2.38 -> 1.67 s
		// (4 each), 2 vCPUs 1.43 -> 1.25 s (5 each).
		TCGCmdline: []string{"tsc=reliable", "no_timer_check"},
		// The boot CPU calibrates its local APIC timer by busy-waiting
		// ~200 ms of guest time: under icount 200 M instructions, about
		// 2.5 s of a 5.3 s boot to the agent. A 1-vCPU guest's ticks come
		// from the HPET just as well.
		ICountCmdline: []string{"noapictimer"},
		TSCDelayLoop:  true,
		// The quick calibration against the PIT failed under TCG in 3 of
		// 8 boots here; the fallback against the HPET then took 93 ms of
		// a 2-vCPU boot (printk times) and came out up to 0.2 % off
		// (2440.3 against 2445.4 MHz).
		TSCkHzParam: "tsc_early_khz",
		// calibrate_APIC_clock counts APIC ticks over LAPIC_CAL_LOOPS
		// jiffies of the TSC. A vCPU descheduled for ~100 ms just before
		// the count starts (seen here under TCG on the wall clock, a
		// loaded host: CI with three test packages beside) sees every
		// jiffy already passed, counts almost no ticks, and the kernel
		// turns its local APIC timer off; on microvm nothing else ticks,
		// and the agent's first sleep never ends.
		StarvedLines: []string{`APIC frequency too slow, disabling apic timer`},
		// With a thread per vCPU, every cross-CPU spin-wait of the boot
		// runs on the 2 host CPUs against the vCPUs it waits for: the
		// parallel bring-up's APs spin until the boot CPU onlines each
		// one (13 s of a 19 s 96-vCPU boot), and the stop_machine of the
		// late switch to the tsc clocksource spins 95 vCPUs while the
		// boot CPU poisons the freed init memory (20 s more in 1 boot of
		// 3). One thread taking turns moves on to the next vCPU at each
		// PAUSE. Measured here by hand, alternating, the lab's QEMU line:
		// 96 vCPUs 18.0-20.4 -> 5.6-6.1 s to the agent, 32 vCPUs 2.2-2.6
		// -> 1.3 s, 16 vCPUs 1.1 -> 0.9 s, 4 vCPUs 0.7 s both.
		OversubscribedSingleThread: true,
	},
	"arm64": {
		Name:         "arm64",
		GOARCH:       "arm64",
		Multiarch:    "aarch64-linux-gnu",
		ELFMachine:   elf.EM_AARCH64,
		DebianArch:   "arm64",
		MakeArch:     "arm64",
		CrossCompile: "aarch64-linux-gnu-",
		CrossPackage: "gcc-aarch64-linux-gnu",
		ImageTarget:  "Image",
		ImagePath:    "arch/arm64/boot/Image",
		QEMU:         "qemu-system-aarch64",
		QEMUPackage:  "qemu-system-arm",
		// pauth-impdef: QARMA pointer authentication is very slow under TCG.
		CPU: "max,pauth-impdef=on",
		// GICv3: the default GICv2 refuses more than 8 vCPUs. The results
		// port sits on one of virt's virtio-mmio transports, not on PCIe:
		// no PCI device to probe and no MSI-X through the GIC's ITS at
		// boot. Measured here, 16 alternating cold 2-vCPU boots to the
		// agent: 1.68 -> 1.62 s (per-round median -0.09 s).
		Machines:      []Machine{{Args: []string{"-M", "virt,gic-version=3"}, ResultsBus: "virtio-serial-device", Transport: "virtio-mmio", NUMA: true, ICount: true, CalibratesTSC: true}},
		Console:       "ttyAMA0",
		MaxCPUs:       256,
		Clusters:      true,
		SyscallPrefix: "__arm64_sys_",
		// Measured: about 0.7 s per vCPU at 96 vCPUs.
		TCGBootPerCPU: 2 * time.Second,
		// 96 vCPU threads on 2 host CPUs spent most of the boot waiting for
		// them: register_cpu_capacity_sysctl, 0.5 s of work, took 7.4 s of
		// wall time; boot to the agent took 34-104 s, against 17-23 s with
		// one thread taking turns (16 vCPUs: 5.4 s against 2.4 s).
		OversubscribedSingleThread: true,
	},
}

// aliases maps other common spellings to lab's names.
var aliases = map[string]string{"amd64": "x86_64", "x86-64": "x86_64", "aarch64": "arm64"}

// Lookup returns the architecture called name (or one of its aliases).
func Lookup(name string) (Arch, error) {
	n := strings.ToLower(name)
	if a, ok := aliases[n]; ok {
		n = a
	}
	a, ok := all[n]
	if !ok {
		return Arch{}, fmt.Errorf("unknown architecture %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return a, nil
}

// ForGOARCH returns the architecture a Go program built for goarch runs on:
// the guest agent finds its own this way.
func ForGOARCH(goarch string) (Arch, error) {
	for _, a := range all {
		if a.GOARCH == goarch {
			return a, nil
		}
	}
	return Arch{}, fmt.Errorf("no guest architecture for GOARCH %q", goarch)
}

// Names lists the supported architectures.
func Names() []string {
	var n []string
	for k := range all {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Native reports whether the guest architecture is the host's, so that KVM
// can run it and no cross-compiler is needed.
func (a Arch) Native() bool { return a.GOARCH == runtime.GOARCH }

// CC is the C compiler kbuild should use.
func (a Arch) CC() string {
	if a.Native() {
		return "gcc"
	}
	return a.CrossCompile + "gcc"
}

// CCPackage is the Debian package that provides CC.
func (a Arch) CCPackage() string {
	if a.Native() || a.CrossPackage == "" {
		return "gcc"
	}
	return a.CrossPackage
}

// MakeArgs are the ARCH/CROSS_COMPILE arguments for every make invocation.
func (a Arch) MakeArgs() []string {
	args := []string{"ARCH=" + a.MakeArch}
	if !a.Native() && a.CrossCompile != "" {
		args = append(args, "CROSS_COMPILE="+a.CrossCompile)
	}
	return args
}

// Syscall is the kernel symbol of syscall name's entry on this arch.
func (a Arch) Syscall(name string) string { return a.SyscallPrefix + name }
