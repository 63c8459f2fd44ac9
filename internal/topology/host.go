package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lab/internal/cpulist"
)

// Host is the machine's own CPUs and NUMA nodes.
type Host struct {
	CPUs  int     `json:"cpus"`
	Nodes [][]int `json:"nodes"` // CPUs of each host NUMA node
}

// ReadHost reads the host's nodes from sysfs; a host without them is one
// node of all its CPUs.
func ReadHost(cpus int) Host {
	h := Host{CPUs: cpus}
	dirs, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	sort.Slice(dirs, func(i, j int) bool { return nodeNum(dirs[i]) < nodeNum(dirs[j]) })
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cpulist"))
		if err != nil {
			continue
		}
		c, err := cpulist.Parse(strings.TrimSpace(string(b)))
		if err != nil || len(c) == 0 {
			continue
		}
		h.Nodes = append(h.Nodes, c)
	}
	if len(h.Nodes) == 0 {
		all := make([]int, cpus)
		for i := range all {
			all[i] = i
		}
		h.Nodes = [][]int{all}
	}
	return h
}

func nodeNum(dir string) int {
	var n int
	fmt.Sscanf(filepath.Base(dir), "node%d", &n)
	return n
}

// Pin modes.
const (
	PinAuto = "auto" // pin when the host has a CPU to spare beyond the vCPUs
	PinOn   = "on"   // pin whenever every vCPU can have its own host CPU
	PinOff  = "off"
)

// PinPlan maps vCPU i to host CPU plan[i], or returns nil with the reason
// when lab does not pin. Guest node k goes onto host node k when the host
// has as many nodes with room, so that emulated distances match real ones.
// In auto mode one host CPU stays free for QEMU's main loop and lab itself.
func PinPlan(s Shape, h Host, mode string) ([]int, string) {
	switch mode {
	case PinOff:
		return nil, "pinning off (--pin off)"
	case PinAuto, "":
		if h.CPUs <= s.CPUs {
			return nil, fmt.Sprintf("not pinned: %d vCPUs on %d host CPUs leave none for QEMU's main loop (--pin on forces it when vCPUs <= host CPUs)", s.CPUs, h.CPUs)
		}
	case PinOn:
		if h.CPUs < s.CPUs {
			return nil, fmt.Sprintf("not pinned: %d vCPUs on %d host CPUs (oversubscribed)", s.CPUs, h.CPUs)
		}
	default:
		return nil, fmt.Sprintf("unknown pin mode %q", mode)
	}
	plan := make([]int, s.CPUs)
	if len(s.Nodes) > 1 && len(h.Nodes) >= len(s.Nodes) {
		ok := true
		for i, n := range s.Nodes {
			if len(n.CPUs) > len(h.Nodes[i]) {
				ok = false
			}
		}
		if ok {
			for i, n := range s.Nodes {
				for j, c := range n.CPUs {
					plan[c] = h.Nodes[i][j]
				}
			}
			return plan, "each vCPU on its own host CPU, guest node k on host node k"
		}
	}
	var all []int
	for _, n := range h.Nodes {
		all = append(all, n...)
	}
	for i := range plan {
		plan[i] = all[i]
	}
	return plan, "each vCPU on its own host CPU"
}

// Caveats are what the host makes of a shape's figures, for results and
// table headers.
func Caveats(s Shape, h Host, kvm bool) []string {
	var c []string
	if s.CPUs > h.CPUs {
		c = append(c, fmt.Sprintf("oversubscribed: %d vCPUs on %d host CPUs", s.CPUs, h.CPUs))
	}
	if len(s.Nodes) > 1 && len(h.Nodes) < len(s.Nodes) {
		c = append(c, fmt.Sprintf("emulated NUMA: the host has %d node%s, remote memory is no slower than local", len(h.Nodes), plural(len(h.Nodes))))
	}
	if !kvm && s.CPUs > h.CPUs {
		c = append(c, "RCU stall timeout 300 s, not 21 s: starved vCPU threads are not kernel stalls")
	}
	if kvm && s.CPUs > h.CPUs {
		c = append(c, "vCPUs share host CPUs: lock holders get descheduled")
	}
	return c
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
