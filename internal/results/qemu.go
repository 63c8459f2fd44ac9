package results

import "time"

// Accelerators and clocks, as results.json records them: package vm runs
// guests under these names, the verdicts read them.
const (
	KVM = "kvm"
	TCG = "tcg"

	ClockWall   = "wall"   // the guest's real clock
	ClockICount = "icount" // QEMU's instruction counter (TCG, 1 vCPU)
)

// Accel is the accelerator a boot ran under, and why it was chosen.
type Accel struct {
	Name   string `json:"name"` // KVM or TCG
	Reason string `json:"reason"`
	// Nested names the VM lab itself ran in, for KVM guests of a host that
	// is a VM (nested virtualisation); "" otherwise.
	Nested string `json:"nested,omitempty"`
}

// Outcome is what QEMU did in one boot, as far as the boot got.
type Outcome struct {
	QEMU        string        `json:"qemu"`              // binary
	Args        []string      `json:"args"`              // full command line
	QEMUVersion string        `json:"qemu_version"`      // from QMP
	VCPUs       []VCPU        `json:"vcpus"`             // from query-cpus-fast
	Memdevs     []Memdev      `json:"memdevs,omitempty"` // from query-memdev
	Pinned      []int         `json:"pinned,omitempty"`  // host CPU of each vCPU thread
	Wall        time.Duration `json:"wall_ns"`           // QEMU start to exit
	ToAgent     time.Duration `json:"to_agent_ns"`       // QEMU start to the agent's first record
	ExitCode    int           `json:"exit_code"`
	// THPOff: QEMU ran without transparent huge pages (TCG guests).
	THPOff bool `json:"thp_off,omitempty"`
	// Deterministic says what QEMU held still so that every boot of one
	// image runs the same instructions (icount): each fix's options and
	// why. Runs before these fixes lack it.
	Deterministic []string  `json:"deterministic,omitempty"`
	Problems      []Finding `json:"console_problems,omitempty"` // WARNING, BUG, oops, RCU stall...
	// CPUSamples are the vCPU threads' host CPU times, read whenever the
	// agent sent a record.
	CPUSamples []CPUSample `json:"cpu_samples,omitempty"`
}

// VCPU is one vCPU as QMP's query-cpus-fast reported it.
type VCPU struct {
	Index    int       `json:"cpu_index"`
	ThreadID int       `json:"thread_id"`
	Props    VCPUProps `json:"props"`
	Target   string    `json:"target"`
}

// VCPUProps is where a vCPU sits in the guest's topology.
type VCPUProps struct {
	Socket  int `json:"socket_id"`
	Cluster int `json:"cluster_id"`
	Core    int `json:"core_id"`
	Thread  int `json:"thread_id"`
	Node    int `json:"node_id"`
}

// Memdev is one memory backend as QMP's query-memdev reported it.
type Memdev struct {
	ID      string `json:"id"`
	SizeMiB int64  `json:"size_mib"`
}

// Finding is a line of the console log where the kernel reported a problem.
type Finding struct {
	Line int    `json:"line"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// CPUSample is how much host CPU time each vCPU thread had used when the
// guest had sent Records records.
type CPUSample struct {
	Records int             `json:"records"`
	At      time.Duration   `json:"at_ns"`  // since QEMU started
	CPU     []time.Duration `json:"cpu_ns"` // per vCPU, user + system
}
