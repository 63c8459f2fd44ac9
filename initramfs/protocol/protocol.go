// Package protocol is what the host and the guest agent say to each other:
// the job on the kernel command line, and JSON records on a virtio-serial
// port that kernel console output cannot interleave with.
package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// CmdlineKey is the kernel command-line parameter that carries the Job.
const CmdlineKey = "lab.job"

// PortName is the virtio-serial port name the agent writes records to.
const PortName = "lab.results"

// ToolPath is where the host puts a guest tool (Job.Tools) in the image.
func ToolPath(tool string) string { return "/bin/" + tool }

// Job tells the agent what to run.
type Job struct {
	Benchmarks []string `json:"b"`
	Producers  []int    `json:"p"`
	// Samples are the measured samples of each benchmark, SampleMS long
	// each; WarmupSamples more are taken first and dropped.
	Samples       int `json:"d"`
	WarmupSamples int `json:"w"`
	// SampleMS is one sample's length: 0 is a second, as the kernel's
	// bench samples. Under icount a shorter sample repeats as well and
	// costs the host less (a guest second is some 2.7 s of host CPU).
	SampleMS  int  `json:"i,omitempty"`
	Affinity  bool `json:"a"`           // pin producer i to CPU i
	MaxActive int  `json:"m,omitempty"` // kretprobe maxactive for tracefs events; 0: kernel default
	// SettleMS is how long the guest idles before each measured section, so
	// that the deferred work of what ran before completes first (icount,
	// where an idle second costs the host almost nothing).
	SettleMS int `json:"s,omitempty"`
	// Retakes is how many times a measured sample the producers did not
	// have to themselves (MaxElsewhereNS) is taken again (icount); the
	// least disturbed is kept, the others recorded as Result.Retaken.
	Retakes int `json:"r,omitempty"`
	// RetakeAboveNS is how much of a sample's time, per producer, may go
	// to the rest of the guest before the sample is taken again: 0 is
	// MaxElsewhereNS (icount). Under the wall clock it is half a sample:
	// only a sample the host starved is taken again (the guest's clock
	// went on while the producers did not run; one in CI read no hit).
	RetakeAboveNS int64 `json:"ra,omitempty"`
	// Tools are guest tools in the image that measure each benchmark
	// again, after the agent (bpf-bench: the kernel's own bench).
	Tools []string `json:"t,omitempty"`
	// StackHz, when set, has the agent take one more sample of each
	// benchmark after the measured ones with a BPF perf_event program
	// sampling kernel stacks on every CPU at this rate (cpu-clock):
	// where the time went under KVM or the wall clock, where no
	// instruction counter runs. That sample is not a measured one (nor
	// the few more it takes when it caught under MinStackSamples).
	StackHz int `json:"k,omitempty"`
}

// RetakeAbove is how much of a sample's time, per producer, may go to the
// rest of the guest before the sample is taken again.
func (j Job) RetakeAbove() int64 {
	if j.RetakeAboveNS > 0 {
		return j.RetakeAboveNS
	}
	return MaxElsewhereNS
}

// Sample is one sample's length.
func (j Job) Sample() time.Duration {
	if j.SampleMS <= 0 {
		return time.Second
	}
	return time.Duration(j.SampleMS) * time.Millisecond
}

// Encode returns the command-line parameter for the job.
func (j Job) Encode() (string, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return "", err
	}
	return CmdlineKey + "=" + base64.RawURLEncoding.EncodeToString(data), nil
}

// DecodeCmdline finds the job in a kernel command line.
func DecodeCmdline(cmdline string) (Job, error) {
	var j Job
	for _, f := range strings.Fields(cmdline) {
		v, ok := strings.CutPrefix(f, CmdlineKey+"=")
		if !ok {
			continue
		}
		data, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return j, fmt.Errorf("%s: %w", CmdlineKey, err)
		}
		return j, json.Unmarshal(data, &j)
	}
	return j, fmt.Errorf("no %s= on the kernel command line", CmdlineKey)
}

// Record types.
const (
	TypeHello  = "hello"  // the agent started
	TypeResult = "result" // one benchmark at one producer count
	TypeDone   = "done"   // everything ran; the guest powers off next
	TypeError  = "error"  // the agent could not go on
)

// Record is one line on the results port.
type Record struct {
	Type   string  `json:"type"`
	Hello  *Hello  `json:"hello,omitempty"`
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Method names how the agent measures: the producers are a static program
// with no runtime (initramfs/targets), sampled by a real-time thread, after
// an idle settle under icount. Figures of another method are not
// comparable with these (the usermode-count loop alone went from 57 to
// 198 M/s), so the history keeps each method's figures in lines of their
// own. Agents before it reported none.
const Method = "producer-program"

// Method is the method this job measures by: Method, with the sample's
// length when it is not a second. The first sample holds the one-off cost
// of the producers' start, a larger share of a shorter sample, so figures
// of different sample lengths differ a little (uprobe-nop under icount,
// one sample: -0.012 % at 500 ms against 1 s, -0.031 % at 250 ms, in
// every boot alike), more than icount's floor: the history keeps them in
// lines of their own.
func (j Job) Method() string {
	if j.Sample() == time.Second {
		return Method
	}
	return fmt.Sprintf("%s, %v samples", Method, j.Sample())
}

// MethodSample is the sample length a method (Job.Method) names: a second
// for Method, 0 for a method that is not this agent's (older agents named
// none).
func MethodSample(method string) time.Duration {
	if method == Method {
		return time.Second
	}
	rest, ok := strings.CutPrefix(method, Method+", ")
	if !ok {
		return 0
	}
	rest, ok = strings.CutSuffix(rest, " samples")
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(rest)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// Hello describes the guest as the agent found it.
type Hello struct {
	Method     string  `json:"method,omitempty"` // how the agent measures (Method)
	Release    string  `json:"release"`          // uname -r
	Version    string  `json:"version"`          // /proc/version
	UptimeS    float64 `json:"uptime_s"`         // guest uptime when the agent started
	OnlineCPUs int     `json:"online_cpus"`      // sysconf(_SC_NPROCESSORS_ONLN)
	Online     string  `json:"online"`           // /sys/devices/system/cpu/online
	// Possible is /sys/devices/system/cpu/possible: what the kernel sizes
	// per-CPU pools by (a kretprobe's default maxactive is
	// max(10, 2 × possible CPUs)).
	Possible    string `json:"possible,omitempty"`
	MemTotalKiB int64  `json:"mem_total_kib"` // from /proc/meminfo
	// Nodes are the NUMA nodes the kernel set up
	// (/sys/devices/system/node/node*), with their CPUs and memory.
	Nodes []Node `json:"nodes,omitempty"`
	// Packages maps each online CPU to its physical package (socket) id,
	// from /sys/devices/system/cpu/cpu*/topology/physical_package_id.
	Packages map[int]int `json:"packages,omitempty"`
}

// Node is one NUMA node as the guest sees it.
type Node struct {
	ID          int    `json:"id"`
	CPUs        string `json:"cpulist"`       // node*/cpulist
	MemTotalKiB int64  `json:"mem_total_kib"` // node*/meminfo MemTotal
}

// Sample is one sampling interval of a benchmark.
type Sample struct {
	IntervalNS int64   `json:"interval_ns"` // measured length of the interval
	Hits       uint64  `json:"hits"`        // what the benchmark counts: probe hits, or calls for probe-free ones
	Calls      uint64  `json:"calls"`       // calls the producers made, counted in user space
	Rate       float64 `json:"rate"`        // hits per second over the measured interval
	// ProducerNS is the CPU time the producers had in the interval, summed:
	// what is missing from IntervalNS × producers went to the rest of the
	// guest (the agent, kernel threads, interrupts elsewhere).
	ProducerNS int64 `json:"producer_ns,omitempty"`
	// Section is the sample's number among the guest's marked sections,
	// from 1: the section of an instruction profile that counted it.
	Section int `json:"section,omitempty"`
}

// MaxElsewhereNS is how much of a sample's time, per producer, may go to
// the rest of the guest before the sample counts as disturbed. Under
// icount a clean first sample gives 50-110 µs to it whatever its length
// (the producers' start, the sampler); one that deferred kernel work
// landed in gave 464 µs, and its rate was 0.045 % low: an image's figure
// then depended on where that work fell (a commit that changed only a
// boot-time log line "moved" uprobe-nop by +0.045 %).
const MaxElsewhereNS = 200_000

// ElsewhereNS is the time in the interval, per producer, that the
// producers did not run: 0 when the agent did not record their CPU time.
func (s Sample) ElsewhereNS(producers int) int64 {
	if s.ProducerNS <= 0 || s.IntervalNS <= 0 || producers < 1 {
		return 0
	}
	return (s.IntervalNS*int64(producers) - s.ProducerNS) / int64(producers)
}

// Result is one benchmark run at one producer count.
type Result struct {
	Benchmark string   `json:"benchmark"`
	Producers int      `json:"producers"`
	Attach    string   `json:"attach,omitempty"` // where the probe went: file, symbol, offset, bytes
	Warmup    []Sample `json:"warmup,omitempty"`
	// Retaken are measured samples taken again because the producers did
	// not have them to themselves (Job.Retakes); Samples keeps the least
	// disturbed of each try.
	Retaken     []Sample          `json:"retaken,omitempty"`
	Samples     []Sample          `json:"samples"`
	ProbeFree   *Sample           `json:"probe_free,omitempty"`  // the same loop without the probe, measured first
	Counters    map[string]uint64 `json:"counters,omitempty"`    // e.g. kprobe_profile hits and misses
	Unsupported string            `json:"unsupported,omitempty"` // why the guest cannot run it
	Error       string            `json:"error,omitempty"`
	// Tool is the guest tool that measured this result, "" for the agent
	// itself: a tool's result is a second source of the same row.
	Tool string `json:"tool,omitempty"`
	// Output is what the tool printed that the result was read from (its
	// command line first), so that a reader can check the parse.
	Output []string `json:"output,omitempty"`
	// Stacks is the sampled profile of one more sample (Job.StackHz).
	Stacks *StackProfile `json:"stacks,omitempty"`
	// VCPUHostShare is set by the host, not the agent: the share of a host
	// CPU each vCPU's QEMU thread got while the guest measured this result
	// (from the record before it to it). Under the wall clock, P producers
	// contend only if P vCPU threads ran at once.
	VCPUHostShare []float64 `json:"vcpu_host_share,omitempty"`
}

// OK reports whether the result has figures: it ran, and was supported.
func (r Result) OK() bool { return r.Error == "" && r.Unsupported == "" }

// Rate is hits per second over the samples' measured time: a long interval
// (steal, a slow guest clock) weighs as much as it lasted.
func Rate(samples []Sample) float64 {
	var hits, ns float64
	for _, s := range samples {
		hits += float64(s.Hits)
		ns += float64(s.IntervalNS)
	}
	if ns == 0 {
		return 0
	}
	return hits / ns * 1e9
}

// StackEvent is the perf event a sampled profile counts by: the kernel's
// hrtimer clock, which every guest has (a guest without a PMU has no
// cycles event).
const StackEvent = "cpu-clock"

// MinStackSamples is how many stack samples a sampled profile takes at
// least, when MaxStackIntervals of a benchmark's sample length allow: a
// TCG vCPU that the host does not run misses its cpu-clock ticks, and a
// 250 ms interval of a 2-vCPU guest beside other work took 12 samples,
// too few to tell a path's share.
const MinStackSamples = 100

// MaxStackIntervals bounds how many sample lengths a sampled profile may
// take to reach MinStackSamples.
const MaxStackIntervals = 5

// StackProfile is what a perf_event BPF program saw in one sample of a
// benchmark (Job.StackHz), or in several back to back when one took fewer
// than MinStackSamples: the kernel stack of each sample it took on every
// CPU, counted by stack.
type StackProfile struct {
	Event string `json:"event"` // StackEvent
	Hz    int    `json:"hz"`    // samples a second, per CPU
	// Sample is the profiled interval itself, measured as any other (the
	// sum of them when it took several): its hits are the operations the
	// stacks are divided by.
	Sample Sample `json:"sample"`
	// Taken is every sample the program ran for; User those in user
	// mode (no kernel stack); Lost those whose stack the map could not
	// keep (full, or a collision). Taken = User + Lost + the stacks' sum.
	Taken uint64 `json:"taken"`
	User  uint64 `json:"user"`
	Lost  uint64 `json:"lost"`
	// Stacks are the kernel stacks, the sampled address first.
	Stacks []StackCount `json:"stacks"`
	// Error says why the profile could not be taken; the result's
	// figures stand without it.
	Error string `json:"error,omitempty"`
}

// StackCount is one kernel stack and how many samples it had.
type StackCount struct {
	N   uint64   `json:"n"`
	PCs []uint64 `json:"pcs"`
}
