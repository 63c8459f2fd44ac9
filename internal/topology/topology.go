// Package topology is a guest's shape: how many vCPUs, how they are grouped
// into sockets, clusters, cores and threads, and how CPUs and memory are
// split into NUMA nodes. It turns a request into QEMU arguments, rejecting
// shapes QEMU or the guest kernel cannot run before anything boots.
package topology

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"lab/internal/arch"
	"lab/internal/cpulist"
)

// MinNodeMiB is the smallest NUMA node lab boots: the guest kernel, the
// unpacked initramfs and the agent live in node 0.
const MinNodeMiB = 256

// Request is what the user asked for; zero values mean "choose".
type Request struct {
	CPUs     int
	Sockets  int
	Clusters int // arm64 only
	Cores    int // per cluster (or per socket without clusters)
	Threads  int // per core
	Memory   string
	NUMA     int     // nodes splitting CPUs and memory evenly; 0 or 1: no NUMA
	Layout   *Layout // explicit nodes instead of NUMA
}

// Layout is an explicit NUMA layout, as a lab file gives it.
type Layout struct {
	Nodes     []NodeSpec `yaml:"nodes" json:"nodes"`
	Distances [][]int    `yaml:"distances,omitempty" json:"distances,omitempty"`
}

// NodeSpec is one node of a Layout.
type NodeSpec struct {
	CPUs   string `yaml:"cpus" json:"cpus"`     // cpulist, e.g. "0-3"; empty: a memory-only node
	Memory string `yaml:"memory" json:"memory"` // QEMU size, e.g. "512M"
}

// Shape is a resolved guest shape: every field filled in and consistent.
type Shape struct {
	CPUs      int     `json:"cpus"`
	Sockets   int     `json:"sockets"`
	Clusters  int     `json:"clusters"`
	Cores     int     `json:"cores"`
	Threads   int     `json:"threads"`
	MemoryMiB int64   `json:"memory_mib"`
	Nodes     []Node  `json:"nodes,omitempty"` // nil: no NUMA (one implicit node)
	Distances [][]int `json:"distances,omitempty"`
}

// Node is one NUMA node of a Shape.
type Node struct {
	CPUs      []int `json:"cpus"`
	MemoryMiB int64 `json:"memory_mib"`
}

// Resolve checks a request against arch (lab's name) and fills in what was
// left open. The arch's vCPU limit and whether it has clusters are in the
// arch table.
func Resolve(archName string, r Request) (Shape, error) {
	a, err := arch.Lookup(archName)
	if err != nil {
		return Shape{}, err
	}
	s := Shape{CPUs: r.CPUs, Sockets: r.Sockets, Clusters: r.Clusters, Cores: r.Cores, Threads: r.Threads}
	if s.CPUs < 1 {
		return Shape{}, fmt.Errorf("%d vCPUs: want at least 1", s.CPUs)
	}
	if s.CPUs > a.MaxCPUs {
		return Shape{}, fmt.Errorf("%d vCPUs: %s guests boot at most %d here (QEMU's machine type and the kernel's NR_CPUS)", s.CPUs, a.Name, a.MaxCPUs)
	}
	if s.Clusters > 1 && !a.Clusters {
		return Shape{}, fmt.Errorf("clusters=%d: %s's machine has no clusters; use sockets and cores", s.Clusters, a.Name)
	}
	if r.Memory != "" || r.Layout == nil {
		mem, err := ParseMiB(r.Memory)
		if err != nil {
			return Shape{}, err
		}
		s.MemoryMiB = mem
	}

	nodes := r.NUMA
	if r.Layout != nil {
		if r.NUMA > 1 && r.NUMA != len(r.Layout.Nodes) {
			return Shape{}, fmt.Errorf("numa %d and an explicit layout of %d nodes: give one or the other", r.NUMA, len(r.Layout.Nodes))
		}
		nodes = len(r.Layout.Nodes)
	}
	if nodes < 0 {
		return Shape{}, fmt.Errorf("numa %d: want 1 or more nodes", nodes)
	}
	if err := s.fillTopology(nodes); err != nil {
		return Shape{}, err
	}
	switch {
	case r.Layout != nil:
		if err := s.explicitNodes(*r.Layout, r.Memory != ""); err != nil {
			return Shape{}, err
		}
	case nodes > 1:
		if err := s.evenNodes(nodes); err != nil {
			return Shape{}, err
		}
	}
	if len(s.Nodes) == 0 && s.MemoryMiB < MinNodeMiB {
		return Shape{}, fmt.Errorf("memory %dM: want at least %dM", s.MemoryMiB, MinNodeMiB)
	}
	return s, nil
}

// Axes are the guest-shape axes of a lab's matrix: each vCPU count, and
// each NUMA node count, the rest of the request the same for all. A matrix
// without NUMA counts, or with an explicit layout, has one NUMA setting.
// The lab file (package spec) and the record of a run (package results)
// both expand their matrix here.
type Axes struct {
	CPUs []int
	NUMA []int
	Base Request // sockets, clusters, cores, threads, memory, layout
}

// Shapes resolves every cpus × numa combination for arch, cpus first.
func (x Axes) Shapes(archName string) ([]Shape, error) {
	numa := x.NUMA
	if len(numa) == 0 || x.Base.Layout != nil {
		numa = []int{0}
	}
	var out []Shape
	for _, cpus := range x.CPUs {
		for _, n := range numa {
			r := x.Base
			r.CPUs, r.NUMA = cpus, n
			s, err := Resolve(archName, r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", archName, err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// Count is how many shapes the axes make over all of arches: all that
// dealing a run's boots to shards needs of a matrix.
func (x Axes) Count(arches []string) (int, error) {
	n := 0
	for _, a := range arches {
		s, err := x.Shapes(a)
		if err != nil {
			return 0, err
		}
		n += len(s)
	}
	return n, nil
}

// fillTopology chooses sockets, clusters, cores and threads that multiply to
// the vCPUs: one socket per NUMA node unless told otherwise.
func (s *Shape) fillTopology(nodes int) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"sockets", s.Sockets}, {"clusters", s.Clusters}, {"cores", s.Cores}, {"threads", s.Threads}} {
		if f.v < 0 {
			return fmt.Errorf("%s=%d: want 1 or more", f.name, f.v)
		}
	}
	if s.Threads == 0 {
		s.Threads = 1
	}
	if s.Clusters == 0 {
		s.Clusters = 1
	}
	if s.Sockets == 0 {
		switch {
		case s.Cores != 0:
			s.Sockets = s.CPUs / (s.Cores * s.Clusters * s.Threads)
		case nodes > 1 && s.CPUs%nodes == 0:
			s.Sockets = nodes
		default:
			s.Sockets = 1
		}
		if s.Sockets < 1 {
			s.Sockets = 1
		}
	}
	if s.Cores == 0 {
		s.Cores = s.CPUs / (s.Sockets * s.Clusters * s.Threads)
	}
	if got := s.Sockets * s.Clusters * s.Cores * s.Threads; got != s.CPUs || s.Cores < 1 {
		return fmt.Errorf("%d vCPUs cannot be %s (= %d): the product must equal the vCPUs, e.g. %s",
			s.CPUs, s.topoText(), got, suggestTopology(s.CPUs, s.Sockets, s.Clusters, s.Threads))
	}
	return nil
}

func suggestTopology(cpus, sockets, clusters, threads int) string {
	var ok []string
	for _, sk := range divisors(cpus) {
		if len(ok) == 4 {
			break
		}
		if sk == sockets || sockets == 0 {
			continue
		}
		if (cpus/sk)%(clusters*threads) == 0 {
			ok = append(ok, fmt.Sprintf("sockets=%d", sk))
		}
	}
	if len(ok) == 0 {
		return fmt.Sprintf("sockets=1,cores=%d", cpus)
	}
	return strings.Join(ok, " or ")
}

func (s Shape) topoText() string {
	t := fmt.Sprintf("sockets=%d", s.Sockets)
	if s.Clusters > 1 {
		t += fmt.Sprintf(",clusters=%d", s.Clusters)
	}
	return t + fmt.Sprintf(",cores=%d,threads=%d", s.Cores, s.Threads)
}

// evenNodes splits CPUs and memory evenly over n nodes.
func (s *Shape) evenNodes(n int) error {
	if s.CPUs%n != 0 {
		return fmt.Errorf("%d vCPUs do not split evenly over %d NUMA nodes: use %s nodes, or %s vCPUs",
			s.CPUs, n, joinInts(divisors(s.CPUs)), joinInts(multiplesNear(s.CPUs, n)))
	}
	if s.MemoryMiB%int64(n) != 0 {
		return fmt.Errorf("memory %dM does not split evenly over %d NUMA nodes: use %dM or %dM",
			s.MemoryMiB, n, s.MemoryMiB/int64(n)*int64(n), (s.MemoryMiB/int64(n)+1)*int64(n))
	}
	per := s.MemoryMiB / int64(n)
	if per < MinNodeMiB {
		return fmt.Errorf("memory %dM over %d NUMA nodes is %dM per node: want at least %dM per node (memory %dM)",
			s.MemoryMiB, n, per, MinNodeMiB, int64(MinNodeMiB)*int64(n))
	}
	cpn := s.CPUs / n
	cps := s.CPUs / s.Sockets
	if cpn%cps != 0 && cps%cpn != 0 {
		return fmt.Errorf("%d NUMA nodes of %d vCPUs each cut across sockets of %d vCPUs (%s): make each node whole sockets, or each socket whole nodes",
			n, cpn, cps, s.topoText())
	}
	for i := 0; i < n; i++ {
		node := Node{MemoryMiB: per}
		for c := i * cpn; c < (i+1)*cpn; c++ {
			node.CPUs = append(node.CPUs, c)
		}
		s.Nodes = append(s.Nodes, node)
	}
	s.Distances = defaultDistances(n)
	return nil
}

// explicitNodes takes a lab file's layout: every vCPU in exactly one node,
// memory summing to the total when a total was given.
func (s *Shape) explicitNodes(l Layout, memoryGiven bool) error {
	if len(l.Nodes) == 0 {
		return fmt.Errorf("numa layout: no nodes")
	}
	owner := make([]int, s.CPUs)
	for i := range owner {
		owner[i] = -1
	}
	var total int64
	for i, ns := range l.Nodes {
		var node Node
		if strings.TrimSpace(ns.CPUs) != "" {
			cpus, err := cpulist.ParseMax(ns.CPUs, s.CPUs-1)
			if err != nil {
				return fmt.Errorf("numa node %d: %w", i, err)
			}
			for _, c := range cpus {
				if c >= s.CPUs {
					return fmt.Errorf("numa node %d: CPU %d, but the guest has CPUs 0-%d", i, c, s.CPUs-1)
				}
				if owner[c] >= 0 {
					return fmt.Errorf("numa node %d: CPU %d is already in node %d", i, c, owner[c])
				}
				owner[c] = i
			}
			node.CPUs = cpus
		}
		mem, err := ParseMiB(ns.Memory)
		if err != nil {
			return fmt.Errorf("numa node %d: %w", i, err)
		}
		if mem < MinNodeMiB {
			return fmt.Errorf("numa node %d: memory %dM: want at least %dM per node", i, mem, MinNodeMiB)
		}
		node.MemoryMiB = mem
		total += mem
		s.Nodes = append(s.Nodes, node)
	}
	var orphans []int
	for c, o := range owner {
		if o < 0 {
			orphans = append(orphans, c)
		}
	}
	if len(orphans) > 0 {
		return fmt.Errorf("numa layout: CPUs %s are in no node: every vCPU needs one", cpulist.Format(orphans))
	}
	if memoryGiven && total != s.MemoryMiB {
		return fmt.Errorf("numa layout: nodes have %dM in all, but memory is %dM: make them equal, or leave memory out", total, s.MemoryMiB)
	}
	s.MemoryMiB = total
	n := len(l.Nodes)
	if l.Distances == nil {
		s.Distances = defaultDistances(n)
		return nil
	}
	if len(l.Distances) != n {
		return fmt.Errorf("numa distances: %d rows for %d nodes", len(l.Distances), n)
	}
	for i, row := range l.Distances {
		if len(row) != n {
			return fmt.Errorf("numa distances: row %d has %d entries for %d nodes", i, len(row), n)
		}
		for j, d := range row {
			switch {
			case i == j && d != 10:
				return fmt.Errorf("numa distances: node %d to itself is %d: the local distance is always 10", i, d)
			case i != j && (d <= 10 || d > 254):
				return fmt.Errorf("numa distances: node %d to node %d is %d: want 11..254 (10 is local)", i, j, d)
			}
		}
	}
	s.Distances = l.Distances
	return nil
}

// defaultDistances is what firmware commonly reports: 10 local, 20 remote.
func defaultDistances(n int) [][]int {
	d := make([][]int, n)
	for i := range d {
		d[i] = make([]int, n)
		for j := range d[i] {
			d[i][j] = 20
			if i == j {
				d[i][j] = 10
			}
		}
	}
	return d
}

// NodeOf returns the node of vCPU cpu (0 without NUMA).
func (s Shape) NodeOf(cpu int) int {
	for i, n := range s.Nodes {
		for _, c := range n.CPUs {
			if c == cpu {
				return i
			}
		}
	}
	return 0
}

// Args are QEMU's -smp, -m and -numa arguments for the shape.
func (s Shape) Args() []string {
	smp := fmt.Sprintf("%d,sockets=%d", s.CPUs, s.Sockets)
	if s.Clusters > 1 {
		smp += fmt.Sprintf(",clusters=%d", s.Clusters)
	}
	smp += fmt.Sprintf(",cores=%d,threads=%d", s.Cores, s.Threads)
	args := []string{"-smp", smp, "-m", fmt.Sprintf("%dM", s.MemoryMiB)}
	for i, n := range s.Nodes {
		args = append(args, "-object", fmt.Sprintf("memory-backend-ram,id=mem%d,size=%dM", i, n.MemoryMiB))
		node := fmt.Sprintf("node,nodeid=%d,memdev=mem%d", i, i)
		// -numa node takes one cpus= per range.
		for _, r := range strings.Split(cpulist.Format(n.CPUs), ",") {
			if r != "" {
				node += ",cpus=" + r
			}
		}
		args = append(args, "-numa", node)
	}
	for i, row := range s.Distances {
		for j, d := range row {
			if i != j {
				args = append(args, "-numa", fmt.Sprintf("dist,src=%d,dst=%d,val=%d", i, j, d))
			}
		}
	}
	return args
}

// String is the shape as the table header shows it.
func (s Shape) String() string {
	t := fmt.Sprintf("%d vCPU", s.CPUs)
	if s.CPUs != 1 {
		t += "s"
	}
	if s.Sockets > 1 || s.Clusters > 1 || s.Threads > 1 {
		t += " (" + s.topoText() + ")"
	}
	if len(s.Nodes) > 1 {
		t += fmt.Sprintf(", %d NUMA nodes", len(s.Nodes))
	}
	return t
}

// MaxMiB is the largest size ParseMiB reads: 1 EiB, far above any host.
const MaxMiB = 1 << 40

// ParseMiB reads a QEMU-style size ("512M", "2G", "1024") in MiB.
func ParseMiB(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	if t == "" {
		return 0, fmt.Errorf("memory: empty size")
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "G"):
		mult, t = 1024, strings.TrimSuffix(t, "G")
	case strings.HasSuffix(t, "M"):
		t = strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "T"):
		mult, t = 1024*1024, strings.TrimSuffix(t, "T")
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(t, "-") {
		n = math.MaxInt64 // too many digits for a number is more than any machine has, below
		err = nil
	}
	if err != nil || n < 1 {
		return 0, fmt.Errorf("memory %q: want a size like 512M or 2G", s)
	}
	// No machine has an exabyte; the bound keeps n * mult from wrapping.
	if n > MaxMiB/mult {
		return 0, fmt.Errorf("memory %q: more than any machine has; want a size like 512M or 2G", s)
	}
	return n * mult, nil
}

func divisors(n int) []int {
	var d []int
	for i := 1; i <= n; i++ {
		if n%i == 0 {
			d = append(d, i)
		}
	}
	return d
}

// multiplesNear returns the multiples of n just below and above cpus.
func multiplesNear(cpus, n int) []int {
	lo := cpus / n * n
	out := []int{}
	if lo > 0 {
		out = append(out, lo)
	}
	out = append(out, lo+n)
	sort.Ints(out)
	return out
}

func joinInts(x []int) string {
	var s []string
	for _, v := range x {
		s = append(s, strconv.Itoa(v))
	}
	if len(s) > 1 {
		return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
	}
	return strings.Join(s, "")
}
