// Package vm boots a kernel and initramfs in QEMU, watches it over QMP, and
// collects the console log and the agent's records.
package vm

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/topology"
)

// Config is one boot.
type Config struct {
	Arch    arch.Arch
	Kernel  string
	Initrd  string
	Shape   topology.Shape // vCPUs, sockets..., memory, NUMA nodes
	Accel   Accel
	Clock   string // ClockWall or ClockICount
	Job     protocol.Job
	Dir     string // where console.log and results.jsonl go
	QMPPath string // unix socket; short, because of sun_path's 108 bytes
	// Oversubscribed says the vCPUs outnumber the host's CPUs.
	Oversubscribed bool
	// LPJ, when set, is passed as lpj= (loops per jiffy) to x86_64 guests
	// under multi-threaded TCG: see Cmdline.
	LPJ int64
	// TSCkHz, when set, is the host's TSC rate: given to TCG guests under
	// the wall clock on arches with a parameter for it (see
	// arch.Arch.TSCkHzParam). Under icount the guest's TSC counts
	// instructions, not the host's cycles.
	TSCkHz int64
	// Quiet is how long the agent may go without sending a record once it
	// is up (0: the boot deadline).
	Quiet time.Duration
	// Pin maps vCPU i to host CPU Pin[i] once QMP names the vCPU threads;
	// nil: not pinned.
	Pin []int
	// Records, when set, is told how many records the agent has sent so
	// far, each time more arrive: for progress displays.
	Records func(n int)
	// SingleThread runs a wall-clock TCG guest's vCPUs in one host thread.
	SingleThread bool
	// Firmware is QEMU's -bios file; "" for QEMU's default.
	Firmware string
	// Verbose puts KERN_INFO messages on the console too (loglevel=7): for
	// labs that expect such lines, like KUnit's results.
	Verbose bool
	// Seed is an icount guest's random seed (-seed; 0 is 1): boots of one
	// image with one seed run the same instructions, and each seed is
	// another random stream, as another image of the same code draws.
	Seed int
	// Plugin is a TCG plugin QEMU loads (lab's instruction profile), with
	// its output in PluginOut; "" for none. It counts what the guest runs
	// and changes none of it: an icount guest runs the same instructions.
	Plugin, PluginOut string
}

// PluginPath is where a boot's instruction profile goes.
func (c Config) PluginPath() string { return filepath.Join(c.Dir, "insncount.txt") }

// ConsoleLog is the path of the boot's console log.
func (c Config) ConsoleLog() string { return filepath.Join(c.Dir, "console.log") }

// ResultsPath is the path the agent's records arrive at.
func (c Config) ResultsPath() string { return filepath.Join(c.Dir, "results.jsonl") }

// Cmdline is the kernel command line.
func (c Config) Cmdline() (string, error) {
	job, err := c.Job.Encode()
	if err != nil {
		return "", err
	}
	// The console is a UART, and printing to it costs the guest time:
	// at KERN_INFO a boot prints ~20 KB, which took most of a 2-vCPU boot
	// and seconds of an icount one. loglevel=5 still prints KERN_WARNING
	// and worse (WARNINGs, BUGs, oopses, RCU stalls, hung tasks: all the
	// console scan looks for); Verbose (KUnit's results are KERN_INFO)
	// asks for everything.
	level := "loglevel=5"
	if c.Verbose {
		level = "loglevel=7"
	}
	// pty.legacy_count=0: the kernel makes 256 legacy BSD pty pairs at
	// boot that nothing in the guest opens; pty_init was 75 ms of a
	// 2-vCPU boot here, the second-largest initcall after acpi_init.
	parts := []string{"console=" + c.Arch.Console, "panic=-1", "oops=panic", level, "pty.legacy_count=0"}
	parts = append(parts, c.Arch.Cmdline...)
	if c.Clock == results.ClockICount {
		parts = append(parts, c.Arch.ICountCmdline...)
	}
	if c.Accel.Name == results.TCG {
		parts = append(parts, c.Arch.TCGCmdline...)
		// Each secondary CPU calibrates its delay loop, and under TCG the
		// direct method fails ("calibrate_delay_direct() failed") and falls
		// back to a slow loop: about 0.3 s of guest time per CPU, the bulk
		// of a 64-vCPU x86_64 boot. Where delays count TSC cycles and the
		// guest's TSC is the host's, lpj from the host's TSC rate is the
		// value the boot CPU computes itself.
		if c.LPJ > 0 && c.Arch.TSCDelayLoop && c.Clock != results.ClockICount {
			parts = append(parts, fmt.Sprintf("lpj=%d", c.LPJ))
		}
		if c.tscRateGiven() {
			parts = append(parts, fmt.Sprintf("%s=%d", c.Arch.TSCkHzParam, c.TSCkHz))
		}
	}
	if c.Accel.Name == results.TCG && c.Oversubscribed {
		// Host threads of an oversubscribed TCG guest can wait tens of
		// seconds for a host CPU while the guest clock runs on: the
		// default 21 s RCU stall timeout then fires on healthy kernels
		// (seen here with 96 vCPUs on 2 host CPUs). 300 s is the kernel's
		// maximum; a real stall still shows, later.
		parts = append(parts, "rcupdate.rcu_cpu_stall_timeout=300")
	}
	cmdline := strings.Join(append(parts, job), " ")
	// COMMAND_LINE_SIZE is 2048 on x86_64 and arm64; a longer line is cut.
	if len(cmdline) >= 2048 {
		return "", fmt.Errorf("kernel command line of %d bytes is over the kernel's 2048: run fewer benchmarks per lab", len(cmdline))
	}
	return cmdline, nil
}

// Args builds QEMU's command line (without the binary).
func (c Config) Args() ([]string, error) {
	if c.Shape.CPUs < 1 {
		return nil, fmt.Errorf("vCPUs %d: want at least 1", c.Shape.CPUs)
	}
	if c.Clock == results.ClockICount {
		if c.Accel.Name != results.TCG {
			return nil, fmt.Errorf("icount needs TCG, not %s", c.Accel.Name)
		}
		if c.Shape.CPUs != 1 {
			return nil, fmt.Errorf("icount with %d vCPUs: only 1 vCPU is reliable (2 of 8 two-vCPU boots stalled when measured)", c.Shape.CPUs)
		}
	}
	cmdline, err := c.Cmdline()
	if err != nil {
		return nil, err
	}
	m := c.Machine()
	cpu := c.Arch.CPU
	if c.Accel.Name == results.KVM {
		cpu = "host"
	}
	args := append(append([]string{}, m.Args...), "-cpu", cpu)
	switch {
	case c.Accel.Name == results.KVM:
		args = append(args, "-accel", "kvm")
	case c.Clock == results.ClockICount:
		// One thread, and guest time counted in instructions (1 ns = 1 insn):
		// rates become path lengths, repeatable from boot to boot.
		args = append(args, "-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off")
		for _, f := range ICountFixes(m, c.Seed) {
			args = append(args, f.Args...)
		}
	case c.SingleThread:
		args = append(args, "-accel", "tcg,thread=single")
	default:
		args = append(args, "-accel", "tcg,thread=multi")
	}
	if c.Firmware != "" {
		args = append(args, "-bios", c.Firmware)
	}
	if c.Plugin != "" {
		// QEMU splits plugin arguments on commas, and cannot take one in
		// the output's path: the boot folder is in the user's checkout.
		if strings.Contains(c.PluginOut, ",") {
			return nil, fmt.Errorf("the instruction profile's output %s: QEMU cannot take a comma in a plugin's argument", c.PluginOut)
		}
		args = append(args, "-plugin", c.Plugin+",out="+c.PluginOut)
	}
	args = append(args, c.Shape.Args()...)
	args = append(args,
		"-kernel", c.Kernel,
		"-initrd", c.Initrd,
		"-append", cmdline,
		"-nodefaults", "-display", "none", "-no-reboot", "-nic", "none",
		// The guest runs a kernel built from someone else's patches: QEMU
		// runs with its seccomp filter, as libvirt runs it.
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
		"-chardev", "file,id=con,path="+optValue(c.ConsoleLog()),
		"-serial", "chardev:con",
		// The agent's results travel on their own port: console noise (a
		// WARNING in the middle of a line) cannot corrupt them.
		"-device", m.ResultsBus+",id=vser",
		"-chardev", "file,id=res,path="+optValue(c.ResultsPath()),
		"-device", "virtserialport,bus=vser.0,chardev=res,name="+protocol.PortName,
		"-qmp", "unix:"+optValue(c.QMPPath)+",server=on,wait=off",
	)
	return args, nil
}

// Fix is one thing QEMU holds still so that a guest on the instruction
// clock runs the same instructions in every boot of one image.
type Fix struct {
	Args []string // QEMU's options
	Why  string   // what would vary without them
}

// ICountFixes are the options that make every boot of one image under
// icount with one seed give the same figures to the last digit. Without
// them one image gave two levels 0.06 % apart (uprobe-nop) and 0.005 % of
// scatter (the controls): 8 boots each here, each fix left out alone, none
// of the three was enough without the other two (docs/validation.md).
// Seed (0 is 1) picks the random stream: the seeds of a kernel's boots.
func ICountFixes(m arch.Machine, seed int) []Fix {
	fixes := []Fix{
		{[]string{"-seed", fmt.Sprint(max(seed, 1))}, "the guest's hardware random numbers (RDRAND, RNDR), which seed the kernel's pool, " +
			"and through it address-space layouts and the agent's runtime, come from a fixed seed (one per boot of a kernel), not the host's"},
		{[]string{"-rtc", "base=" + ICountRTCBase + ",clock=vm"}, "the guest's real-time clock starts at a fixed date and runs " +
			"on the instruction clock, not the host's wall clock"},
	}
	if m.Transport != "" {
		fixes = append(fixes, Fix{[]string{"-global", m.Transport + ".ioeventfd=off"}, "the guest's virtio notifications " +
			"(its writes to the results port) are handled within its instruction stream, not by a host thread " +
			"at a moment the host's load decides while the guest waits for it"})
	}
	return fixes
}

// ICountRTCBase is the date an icount guest's clock starts at.
const ICountRTCBase = "2024-01-01T00:00:00"

// optValue is a path as the value of a QEMU option list (-chardev, -qmp),
// whose options are separated by commas: QEMU reads a doubled comma as one.
// The run folder is in the user's checkout, whose path may hold one.
func optValue(path string) string { return strings.ReplaceAll(path, ",", ",,") }

// tscRateGiven says the guest gets its TSC rate on the command line (TCG
// under the wall clock, where the guest's TSC is the host's and lab knows
// its rate), so that it does not calibrate the TSC at boot.
func (c Config) tscRateGiven() bool {
	return c.Accel.Name == results.TCG && c.TSCkHz > 0 && c.Arch.TSCkHzParam != "" && c.Clock != results.ClockICount
}

// Machine is the QEMU machine the guest boots on: the arch's first that
// describes its NUMA nodes, suits its clock, and has a timer to calibrate
// the TSC against when a TCG guest must calibrate it. Plans ask it too,
// for the machine's firmware, with the fields it reads filled in.
func (c Config) Machine() arch.Machine {
	return c.Arch.MachineFor(arch.Needs{NUMA: len(c.Shape.Nodes) > 0, ICount: c.Clock == results.ClockICount,
		CalibratesTSC: c.Accel.Name == results.TCG && !c.tscRateGiven()})
}
