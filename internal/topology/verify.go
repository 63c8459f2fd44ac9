package topology

import (
	"fmt"
	"sort"
	"strings"

	"lab/initramfs/protocol"
	"lab/internal/cpulist"
)

// QMPCPU is one vCPU as QEMU's query-cpus-fast reports it.
type QMPCPU struct {
	Index   int
	Socket  int
	Cluster int
	Core    int
	Thread  int
	Node    int
}

// Memdev is one memory backend as QEMU's query-memdev reports it.
type Memdev struct {
	ID      string `json:"id"`
	SizeMiB int64  `json:"size_mib"`
}

// MemTolerance is how much of a node's memory the guest may not count as
// MemTotal: the kernel image, its page tables and the firmware's holes
// (measured up to about 20 % on a 256M node 0).
const MemTolerance = 0.30

// Verify checks a boot against its shape twice: as QEMU built the machine
// (QMP) and as the guest kernel found it (the agent's hello). A mismatch
// returns an error that prints both views.
func Verify(s Shape, cpus []QMPCPU, memdevs []Memdev, guest *protocol.Hello) error {
	var bad []string
	bad = append(bad, verifyQMP(s, cpus, memdevs)...)
	bad = append(bad, verifyGuest(s, guest)...)
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("the guest does not have the shape asked for (%s):\n    %s\n  QEMU's view (QMP): %s\n  the guest's view: %s",
		s, strings.Join(bad, "\n    "), QMPText(cpus, memdevs), GuestText(guest))
}

func verifyQMP(s Shape, cpus []QMPCPU, memdevs []Memdev) []string {
	var bad []string
	if len(cpus) != s.CPUs {
		return []string{fmt.Sprintf("QMP: %d vCPUs, asked for %d", len(cpus), s.CPUs)}
	}
	sockets, cores, threads := map[int]bool{}, map[[3]int]bool{}, map[[4]int]bool{}
	for _, c := range cpus {
		sockets[c.Socket] = true
		cores[[3]int{c.Socket, c.Cluster, c.Core}] = true
		threads[[4]int{c.Socket, c.Cluster, c.Core, c.Thread}] = true
		if len(s.Nodes) > 1 && c.Node != s.NodeOf(c.Index) {
			bad = append(bad, fmt.Sprintf("QMP: vCPU %d is in node %d, asked for node %d", c.Index, c.Node, s.NodeOf(c.Index)))
		}
	}
	if len(sockets) != s.Sockets {
		bad = append(bad, fmt.Sprintf("QMP: %d sockets, asked for %d", len(sockets), s.Sockets))
	}
	if len(cores) != s.Sockets*s.Clusters*s.Cores {
		bad = append(bad, fmt.Sprintf("QMP: %d cores in all, asked for %d", len(cores), s.Sockets*s.Clusters*s.Cores))
	}
	if len(threads) != s.CPUs {
		bad = append(bad, fmt.Sprintf("QMP: %d distinct socket/core/thread ids for %d vCPUs", len(threads), s.CPUs))
	}
	if len(s.Nodes) > 1 {
		size := map[string]int64{}
		for _, m := range memdevs {
			size[m.ID] = m.SizeMiB
		}
		for i, n := range s.Nodes {
			id := fmt.Sprintf("mem%d", i)
			if got, ok := size[id]; !ok {
				bad = append(bad, fmt.Sprintf("QMP: no memory backend %s for node %d", id, i))
			} else if got != n.MemoryMiB {
				bad = append(bad, fmt.Sprintf("QMP: node %d's memory backend has %dM, asked for %dM", i, got, n.MemoryMiB))
			}
		}
	}
	return bad
}

func verifyGuest(s Shape, g *protocol.Hello) []string {
	if g == nil {
		return []string{"guest: the agent never reported"}
	}
	var bad []string
	online, err := cpulist.Parse(g.Online)
	if err != nil {
		return []string{fmt.Sprintf("guest: online CPUs %q: %v", g.Online, err)}
	}
	if len(online) != s.CPUs {
		bad = append(bad, fmt.Sprintf("guest: %d CPUs online (%s), asked for %d", len(online), g.Online, s.CPUs))
	}
	want := s.Nodes
	if len(want) == 0 {
		// No NUMA: the kernel makes one node of everything.
		all := make([]int, s.CPUs)
		for i := range all {
			all[i] = i
		}
		want = []Node{{CPUs: all, MemoryMiB: s.MemoryMiB}}
	}
	if len(g.Nodes) != len(want) {
		bad = append(bad, fmt.Sprintf("guest: %d NUMA nodes, asked for %d", len(g.Nodes), len(want)))
	} else {
		for i, n := range g.Nodes {
			if n.ID != i {
				bad = append(bad, fmt.Sprintf("guest: node ids %v, asked for 0-%d", nodeIDs(g.Nodes), len(want)-1))
				break
			}
			if got, exp := normal(n.CPUs), cpulist.Format(want[i].CPUs); got != exp {
				bad = append(bad, fmt.Sprintf("guest: node %d has CPUs %q, asked for %q", i, got, exp))
			}
			// Without NUMA, node 0's MemTotal is the whole guest's.
			kib := want[i].MemoryMiB * 1024
			if n.MemTotalKiB > kib || float64(n.MemTotalKiB) < float64(kib)*(1-MemTolerance) {
				bad = append(bad, fmt.Sprintf("guest: node %d has %d MiB, asked for %dM (%.0f %% may go to the kernel and firmware)",
					i, n.MemTotalKiB/1024, want[i].MemoryMiB, MemTolerance*100))
			}
		}
	}
	// Sockets as physical packages; arm64 kernels number packages from the
	// firmware's cpu-map, so only a count is compared.
	if len(g.Packages) > 0 {
		pk := map[int]bool{}
		for _, p := range g.Packages {
			pk[p] = true
		}
		if len(pk) != s.Sockets {
			bad = append(bad, fmt.Sprintf("guest: %d physical packages, asked for %d sockets", len(pk), s.Sockets))
		}
	}
	return bad
}

func normal(list string) string {
	c, err := cpulist.Parse(list)
	if err != nil {
		return list
	}
	return cpulist.Format(c)
}

func nodeIDs(ns []protocol.Node) []int {
	var ids []int
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	return ids
}

// QMPText summarises QEMU's view: vCPUs per node and socket, memory backends.
func QMPText(cpus []QMPCPU, memdevs []Memdev) string {
	byNode := map[int][]int{}
	sockets := map[int]bool{}
	for _, c := range cpus {
		byNode[c.Node] = append(byNode[c.Node], c.Index)
		sockets[c.Socket] = true
	}
	var parts []string
	for _, n := range sortedKeys(byNode) {
		sort.Ints(byNode[n])
		parts = append(parts, fmt.Sprintf("node %d: CPUs %s", n, cpulist.Format(byNode[n])))
	}
	for _, m := range memdevs {
		parts = append(parts, fmt.Sprintf("%s %dM", m.ID, m.SizeMiB))
	}
	return fmt.Sprintf("%d vCPUs in %d sockets; %s", len(cpus), len(sockets), strings.Join(parts, "; "))
}

// GuestText summarises the guest's view: online CPUs, nodes, packages.
func GuestText(g *protocol.Hello) string {
	if g == nil {
		return "(no report)"
	}
	parts := []string{fmt.Sprintf("online %s", g.Online)}
	for _, n := range g.Nodes {
		parts = append(parts, fmt.Sprintf("node %d: CPUs %s, %d MiB", n.ID, n.CPUs, n.MemTotalKiB/1024))
	}
	if len(g.Packages) > 0 {
		pk := map[int]bool{}
		for _, p := range g.Packages {
			pk[p] = true
		}
		parts = append(parts, fmt.Sprintf("%d packages", len(pk)))
	}
	return strings.Join(parts, "; ")
}

func sortedKeys(m map[int][]int) []int {
	var k []int
	for n := range m {
		k = append(k, n)
	}
	sort.Ints(k)
	return k
}
