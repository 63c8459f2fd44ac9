// Command agent is the guest side of lab, and the guest's /init. It reads
// its job from the kernel command line, runs the benchmarks, writes JSON
// records to the lab.results virtio-serial port, and powers off.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/u-root/u-root/pkg/mount"
	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
)

func main() {
	// The console is the kernel's: say where we are, for the boot log.
	fmt.Println("lab-agent: started")
	err := run()
	if err != nil {
		fmt.Println("lab-agent: error:", err)
	}
	fmt.Println("lab-agent: powering off")
	// The console's UART sends what is written to it from interrupts: wait
	// until it has sent everything (tcdrain) before the machine goes away.
	// It was a fixed 0.5 s sleep, added to every boot.
	if err := unix.IoctlSetInt(int(os.Stdout.Fd()), unix.TCSBRK, 1); err != nil {
		time.Sleep(500 * time.Millisecond)
	}
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Println("lab-agent: power off:", err)
	}
}

func run() (err error) {
	start := uptime()
	if err := setUp(); err != nil {
		return err
	}
	// The agent's start is boot time, and under TCG that is mostly code
	// translated the first time it runs: with /proc and /sys mounted, the
	// job and the hello are read on other vCPUs (when the guest has them)
	// while this one mounts the rest and opens the results port. Measured
	// here, main to the hello sent at 2 vCPUs (guest uptime, medians of 6
	// boots): x86_64 128 -> 116 ms, arm64 132 -> 84 ms.
	job := async(readJob)
	hi := async(func() (*protocol.Hello, error) { return hello(start), nil })
	if err := mounts(lateMounts); err != nil {
		return err
	}
	port, err := openPort()
	if err != nil {
		return err
	}
	defer port.Close()
	out := json.NewEncoder(port)
	send := func(r protocol.Record) {
		if err := out.Encode(r); err != nil {
			fmt.Println("lab-agent: write results:", err)
		}
	}
	fail := func(err error) error {
		send(protocol.Record{Type: protocol.TypeError, Error: err.Error()})
		return err
	}
	// The agent is PID 1: if it died of a panic the kernel would panic
	// too ("Attempted to kill init") and the boot would read as the
	// kernel's fault. Report it as the agent's.
	defer func() {
		if r := recover(); r != nil {
			err = fail(fmt.Errorf("agent panicked: %v\n%s", r, debug.Stack()))
		}
	}()
	j, err := job()
	if err != nil {
		return fail(err)
	}
	h, err := hi()
	if err != nil {
		return fail(err)
	}
	h.Method = j.Method()
	send(protocol.Record{Type: protocol.TypeHello, Hello: h})

	runJob(j, send)
	send(protocol.Record{Type: protocol.TypeDone})
	// No fsync: a virtio port has nothing to flush (it fails with EINVAL),
	// and each write has already reached the host's queue.
	return nil
}

// readJob reads the job from the kernel command line.
func readJob() (protocol.Job, error) {
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return protocol.Job{}, err
	}
	return protocol.DecodeCmdline(string(cmdline))
}

// async runs f on a goroutine of its own and returns what waits for its
// result. A panic in f comes back as an error: the agent is PID 1, and a
// panic on a goroutine it did not recover would panic the kernel.
func async[T any](f func() (T, error)) func() (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- result{err: fmt.Errorf("agent panicked: %v\n%s", r, debug.Stack())}
			}
		}()
		v, err := f()
		ch <- result{v, err}
	}()
	return func() (T, error) {
		r := <-ch
		return r.v, r.err
	}
}

// setUp readies what the agent reads first. As /init the agent does in
// its own process what u-root's init does before it starts a uinit (a
// second Go program starting cost 0.3-0.5 s of a TCG boot): a PATH (the
// kernel gives init none) for what the tools start, then the mounts,
// with u-root's mount package. Not u-root's libinit: its imports
// (netlink, module loading, three decompressors) ran 70 package
// initialisers at every TCG boot for two environment variables.
func setUp() error {
	if os.Getpid() == 1 && os.Getenv("PATH") == "" {
		os.Setenv("PATH", "/bin:/sbin:/usr/bin:/usr/sbin")
	}
	return mounts(earlyMounts)
}

// runJob runs every benchmark of the job at every producer count, each
// followed by the job's tools, and sends a record for each.
func runJob(job protocol.Job, send func(protocol.Record)) {
	// A collection during a sample would show up as noise; the agent
	// allocates little, so the heap can grow unchecked for a run.
	debug.SetGCPercent(-1)
	maxP := 1
	for _, p := range job.Producers {
		maxP = max(maxP, p)
	}
	runtime.GOMAXPROCS(maxP + 2)

	for _, name := range job.Benchmarks {
		for _, p := range job.Producers {
			fmt.Printf("lab-agent: %s, %d producer(s)\n", name, p)
			res := runBenchmark(name, p, job)
			send(protocol.Record{Type: protocol.TypeResult, Result: &res})
			// A tool measures what the agent could: right after it, on
			// the same boot, so that the two see the same machine.
			for _, tool := range job.Tools {
				if !res.OK() {
					continue
				}
				if !haveTool(tool) {
					send(protocol.Record{Type: protocol.TypeResult, Result: &protocol.Result{Benchmark: name, Producers: p, Tool: tool,
						Error: fmt.Sprintf("the job asks for %s, which is not in the image", tool)}})
					continue
				}
				if args, ok := toolArgs(tool, name, p, job); ok {
					fmt.Printf("lab-agent: %s, %d producer(s), measured by %s\n", name, p, tool)
					send(protocol.Record{Type: protocol.TypeResult, Result: runTool(tool, name, p, job, args)})
				}
			}
		}
	}
}

// fsMount is one file system the guest needs.
type fsMount struct{ src, dir, fstype string }

var (
	// earlyMounts are what the job, the hello and the results port are
	// read from; lateMounts what the port and the benchmarks need.
	earlyMounts = []fsMount{{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}}
	lateMounts  = []fsMount{
		{"devtmpfs", "/dev", "devtmpfs"},
		{"tracefs", "/sys/kernel/tracing", "tracefs"},
		{"debugfs", "/sys/kernel/debug", "debugfs"},
	}
)

// mounts makes sure the file systems ms are there.
func mounts(ms []fsMount) error {
	for _, m := range ms {
		mkdir := func() error { return os.MkdirAll(m.dir, 0o755) }
		_, err := mount.Mount(m.src, m.dir, m.fstype, "", 0, mkdir)
		if err != nil && !errors.Is(err, unix.EBUSY) {
			return err
		}
	}
	return nil
}

// openPort finds the virtio-serial port by name (no udev here to make the
// /dev/virtio-ports/ symlink).
func openPort() (*os.File, error) {
	names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || strings.TrimSpace(string(b)) != protocol.PortName {
			continue
		}
		dev := "/dev/" + filepath.Base(filepath.Dir(n))
		return os.OpenFile(dev, os.O_WRONLY, 0)
	}
	return nil, fmt.Errorf("no virtio-serial port named %s (CONFIG_VIRTIO_CONSOLE?)", protocol.PortName)
}

func hello(start float64) *protocol.Hello {
	h := &protocol.Hello{UptimeS: start}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Release = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/version"); err == nil {
		h.Version = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		h.Online = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/possible"); err == nil {
		h.Possible = strings.TrimSpace(string(b))
	}
	h.OnlineCPUs = runtime.NumCPU()
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		h.OnlineCPUs = set.Count()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				fmt.Sscanf(strings.TrimPrefix(l, "MemTotal:"), "%d", &h.MemTotalKiB)
			}
		}
	}
	h.Nodes = numaNodes()
	h.Packages = packages()
	return h
}

// numaNodes reads the guest's NUMA nodes from sysfs.
func numaNodes() []protocol.Node {
	dirs, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	var nodes []protocol.Node
	for _, d := range dirs {
		var n protocol.Node
		if _, err := fmt.Sscanf(filepath.Base(d), "node%d", &n.ID); err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d, "cpulist")); err == nil {
			n.CPUs = strings.TrimSpace(string(b))
		}
		// "Node 0 MemTotal:       1014492 kB"
		if b, err := os.ReadFile(filepath.Join(d, "meminfo")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if _, rest, ok := strings.Cut(l, "MemTotal:"); ok {
					fmt.Sscanf(rest, "%d", &n.MemTotalKiB)
				}
			}
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes
}

// packages maps each CPU to its physical package id.
func packages() map[int]int {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*")
	out := map[int]int{}
	for _, d := range dirs {
		var cpu, pkg int
		if _, err := fmt.Sscanf(filepath.Base(d), "cpu%d", &cpu); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "topology", "physical_package_id"))
		if err != nil {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &pkg); err == nil {
			out[cpu] = pkg
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// uptime is the time since boot, as /proc/uptime shows it; read from the
// clock itself, because as /init the agent starts before /proc is mounted.
func uptime() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}
