package topology

import (
	"fmt"
	"strings"
	"testing"

	"lab/initramfs/protocol"
)

func TestResolveArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		arch string
		req  Request
		want string // QEMU arguments, space-joined
		str  string
	}{
		{"one vCPU", "x86_64", Request{CPUs: 1, Memory: "1G"},
			"-smp 1,sockets=1,cores=1,threads=1 -m 1024M", "1 vCPU"},
		{"96 flat", "arm64", Request{CPUs: 96, Memory: "1G"},
			"-smp 96,sockets=1,cores=96,threads=1 -m 1024M", "96 vCPUs"},
		{"x86 2 nodes 2 sockets", "x86_64", Request{CPUs: 4, Memory: "1G", NUMA: 2},
			"-smp 4,sockets=2,cores=2,threads=1 -m 1024M" +
				" -object memory-backend-ram,id=mem0,size=512M -numa node,nodeid=0,memdev=mem0,cpus=0-1" +
				" -object memory-backend-ram,id=mem1,size=512M -numa node,nodeid=1,memdev=mem1,cpus=2-3" +
				" -numa dist,src=0,dst=1,val=20 -numa dist,src=1,dst=0,val=20",
			"4 vCPUs (sockets=2,cores=2,threads=1), 2 NUMA nodes"},
		{"arm64 4 nodes clusters", "arm64", Request{CPUs: 16, Memory: "2G", NUMA: 4, Clusters: 2},
			"-smp 16,sockets=4,clusters=2,cores=2,threads=1 -m 2048M" +
				" -object memory-backend-ram,id=mem0,size=512M -numa node,nodeid=0,memdev=mem0,cpus=0-3" +
				" -object memory-backend-ram,id=mem1,size=512M -numa node,nodeid=1,memdev=mem1,cpus=4-7" +
				" -object memory-backend-ram,id=mem2,size=512M -numa node,nodeid=2,memdev=mem2,cpus=8-11" +
				" -object memory-backend-ram,id=mem3,size=512M -numa node,nodeid=3,memdev=mem3,cpus=12-15" +
				" -numa dist,src=0,dst=1,val=20 -numa dist,src=0,dst=2,val=20 -numa dist,src=0,dst=3,val=20" +
				" -numa dist,src=1,dst=0,val=20 -numa dist,src=1,dst=2,val=20 -numa dist,src=1,dst=3,val=20" +
				" -numa dist,src=2,dst=0,val=20 -numa dist,src=2,dst=1,val=20 -numa dist,src=2,dst=3,val=20" +
				" -numa dist,src=3,dst=0,val=20 -numa dist,src=3,dst=1,val=20 -numa dist,src=3,dst=2,val=20",
			"16 vCPUs (sockets=4,clusters=2,cores=2,threads=1), 4 NUMA nodes"},
		{"threads", "x86_64", Request{CPUs: 8, Memory: "1G", Threads: 2},
			"-smp 8,sockets=1,cores=4,threads=2 -m 1024M", "8 vCPUs (sockets=1,cores=4,threads=2)"},
		{"sub-NUMA: one socket, two nodes", "x86_64", Request{CPUs: 8, Memory: "1G", NUMA: 2, Sockets: 1},
			"-smp 8,sockets=1,cores=8,threads=1 -m 1024M" +
				" -object memory-backend-ram,id=mem0,size=512M -numa node,nodeid=0,memdev=mem0,cpus=0-3" +
				" -object memory-backend-ram,id=mem1,size=512M -numa node,nodeid=1,memdev=mem1,cpus=4-7" +
				" -numa dist,src=0,dst=1,val=20 -numa dist,src=1,dst=0,val=20",
			"8 vCPUs, 2 NUMA nodes"},
		{"explicit layout", "arm64", Request{CPUs: 4, Layout: &Layout{
			Nodes:     []NodeSpec{{CPUs: "0,2", Memory: "256M"}, {CPUs: "1,3", Memory: "768M"}},
			Distances: [][]int{{10, 31}, {31, 10}}}},
			"-smp 4,sockets=2,cores=2,threads=1 -m 1024M" +
				" -object memory-backend-ram,id=mem0,size=256M -numa node,nodeid=0,memdev=mem0,cpus=0,cpus=2" +
				" -object memory-backend-ram,id=mem1,size=768M -numa node,nodeid=1,memdev=mem1,cpus=1,cpus=3" +
				" -numa dist,src=0,dst=1,val=31 -numa dist,src=1,dst=0,val=31",
			"4 vCPUs (sockets=2,cores=2,threads=1), 2 NUMA nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(tc.arch, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.Args(), " "); got != tc.want {
				t.Errorf("args:\n got %s\nwant %s", got, tc.want)
			}
			if s.String() != tc.str {
				t.Errorf("String() = %q, want %q", s.String(), tc.str)
			}
		})
	}
}

func TestResolveRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		arch string
		req  Request
		want string // part of the error, saying what would work
	}{
		{"cpus not divisible by nodes", "arm64", Request{CPUs: 6, Memory: "1G", NUMA: 4},
			"6 vCPUs do not split evenly over 4 NUMA nodes: use 1, 2, 3 or 6 nodes, or 4 or 8 vCPUs"},
		{"too little memory per node", "arm64", Request{CPUs: 16, Memory: "512M", NUMA: 4},
			"128M per node: want at least 256M per node (memory 1024M)"},
		{"memory not divisible", "x86_64", Request{CPUs: 6, Memory: "1000M", NUMA: 3},
			"use 999M or 1002M"},
		{"x86 TCG above 255", "x86_64", Request{CPUs: 256, Memory: "1G"},
			"x86_64 guests boot at most 255"},
		{"arm64 above NR_CPUS", "arm64", Request{CPUs: 300, Memory: "1G"},
			"arm64 guests boot at most 256"},
		{"x86 clusters", "x86_64", Request{CPUs: 4, Clusters: 2, Memory: "1G"},
			"machine has no clusters"},
		{"bad product", "x86_64", Request{CPUs: 6, Sockets: 4, Memory: "1G"},
			"the product must equal the vCPUs, e.g. sockets=1 or sockets=2"},
		{"node across sockets", "x86_64", Request{CPUs: 6, Sockets: 2, Memory: "1536M", NUMA: 3},
			"cut across sockets"},
		{"explicit: CPU twice", "arm64", Request{CPUs: 2, Layout: &Layout{Nodes: []NodeSpec{{CPUs: "0-1", Memory: "512M"}, {CPUs: "1", Memory: "512M"}}}},
			"CPU 1 is already in node 0"},
		{"explicit: CPU in no node", "arm64", Request{CPUs: 4, Layout: &Layout{Nodes: []NodeSpec{{CPUs: "0-1", Memory: "512M"}, {CPUs: "2", Memory: "512M"}}}},
			"CPUs 3 are in no node"},
		{"explicit: memory mismatch", "arm64", Request{CPUs: 2, Memory: "2G", Layout: &Layout{Nodes: []NodeSpec{{CPUs: "0", Memory: "512M"}, {CPUs: "1", Memory: "512M"}}}},
			"nodes have 1024M in all, but memory is 2048M"},
		{"explicit: local distance", "arm64", Request{CPUs: 2, Layout: &Layout{Nodes: []NodeSpec{{CPUs: "0", Memory: "512M"}, {CPUs: "1", Memory: "512M"}}, Distances: [][]int{{10, 20}, {20, 12}}}},
			"node 1 to itself is 12"},
		{"explicit: remote distance", "arm64", Request{CPUs: 2, Layout: &Layout{Nodes: []NodeSpec{{CPUs: "0", Memory: "512M"}, {CPUs: "1", Memory: "512M"}}, Distances: [][]int{{10, 5}, {20, 10}}}},
			"want 11..254"},
		{"bad memory", "arm64", Request{CPUs: 2, Memory: "lots"},
			`memory "lots": want a size like 512M or 2G`},
		{"memory too many digits", "arm64", Request{CPUs: 2, Memory: "99999999999999999999"},
			`memory "99999999999999999999": more than any machine has`},
		{"memory too many digits, G", "arm64", Request{CPUs: 2, Memory: "99999999999999999999G"},
			`memory "99999999999999999999G": more than any machine has`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.arch, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	s, err := Resolve("arm64", Request{CPUs: 4, Memory: "1G", NUMA: 2})
	if err != nil {
		t.Fatal(err)
	}
	qmp := []QMPCPU{{0, 0, 0, 0, 0, 0}, {1, 0, 0, 1, 0, 0}, {2, 1, 0, 0, 0, 1}, {3, 1, 0, 1, 0, 1}}
	mem := []Memdev{{"mem0", 512}, {"mem1", 512}}
	guest := &protocol.Hello{Online: "0-3", Nodes: []protocol.Node{
		{ID: 0, CPUs: "0-1", MemTotalKiB: 480 * 1024}, {ID: 1, CPUs: "2-3", MemTotalKiB: 500 * 1024}},
		Packages: map[int]int{0: 0, 1: 0, 2: 1, 3: 1}}
	if err := Verify(s, qmp, mem, guest); err != nil {
		t.Fatalf("matching views: %v", err)
	}
	for _, tc := range []struct {
		name  string
		qmp   func([]QMPCPU) []QMPCPU
		guest func(protocol.Hello) protocol.Hello
		mem   []Memdev
		want  string
	}{
		{"QMP node", func(c []QMPCPU) []QMPCPU { c[3].Node = 0; return c }, nil, nil, "QMP: vCPU 3 is in node 0, asked for node 1"},
		{"QMP memdev", nil, nil, []Memdev{{"mem0", 512}, {"mem1", 256}}, "node 1's memory backend has 256M"},
		{"guest one node", nil, func(h protocol.Hello) protocol.Hello {
			h.Nodes = []protocol.Node{{ID: 0, CPUs: "0-3", MemTotalKiB: 990 * 1024}}
			return h
		}, nil, "guest: 1 NUMA nodes, asked for 2"},
		{"guest cpus", nil, func(h protocol.Hello) protocol.Hello {
			h.Nodes = []protocol.Node{{ID: 0, CPUs: "0-2", MemTotalKiB: 480 * 1024}, {ID: 1, CPUs: "3", MemTotalKiB: 480 * 1024}}
			return h
		}, nil, `guest: node 0 has CPUs "0-2", asked for "0-1"`},
		{"guest memory", nil, func(h protocol.Hello) protocol.Hello {
			h.Nodes[1].MemTotalKiB = 100 * 1024
			return h
		}, nil, "guest: node 1 has 100 MiB, asked for 512M"},
		{"guest online", nil, func(h protocol.Hello) protocol.Hello { h.Online = "0-2"; return h }, nil, "guest: 3 CPUs online"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := append([]QMPCPU(nil), qmp...)
			if tc.qmp != nil {
				q = tc.qmp(q)
			}
			g := *guest
			g.Nodes = append([]protocol.Node(nil), guest.Nodes...)
			if tc.guest != nil {
				g = tc.guest(g)
			}
			m := mem
			if tc.mem != nil {
				m = tc.mem
			}
			err := Verify(s, q, m, &g)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			// Both views are printed, so the user can see what differs.
			if !strings.Contains(err.Error(), "QEMU's view (QMP)") || !strings.Contains(err.Error(), "the guest's view") {
				t.Errorf("error does not show both views: %v", err)
			}
		})
	}
}

func TestPinPlan(t *testing.T) {
	flat, _ := Resolve("x86_64", Request{CPUs: 2, Memory: "1G"})
	numa, _ := Resolve("x86_64", Request{CPUs: 4, Memory: "1G", NUMA: 2})
	twoNodes := Host{CPUs: 8, Nodes: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}}
	for _, tc := range []struct {
		name string
		s    Shape
		h    Host
		mode string
		want []int
	}{
		{"auto, no spare CPU", flat, Host{CPUs: 2, Nodes: [][]int{{0, 1}}}, PinAuto, nil},
		{"on, exactly enough", flat, Host{CPUs: 2, Nodes: [][]int{{0, 1}}}, PinOn, []int{0, 1}},
		{"auto, spare", flat, Host{CPUs: 4, Nodes: [][]int{{0, 1, 2, 3}}}, PinAuto, []int{0, 1}},
		{"off", flat, Host{CPUs: 4, Nodes: [][]int{{0, 1, 2, 3}}}, PinOff, nil},
		{"guest nodes on host nodes", numa, twoNodes, PinAuto, []int{0, 1, 4, 5}},
		{"oversubscribed", numa, Host{CPUs: 2, Nodes: [][]int{{0, 1}}}, PinOn, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := PinPlan(tc.s, tc.h, tc.mode)
			if len(got) != len(tc.want) {
				t.Fatalf("plan %v (%s), want %v", got, why, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("plan %v (%s), want %v", got, why, tc.want)
				}
			}
		})
	}
}

func TestCaveats(t *testing.T) {
	s, _ := Resolve("arm64", Request{CPUs: 96, Memory: "1G"})
	c := strings.Join(Caveats(s, Host{CPUs: 2, Nodes: [][]int{{0, 1}}}, false), "; ")
	if !strings.Contains(c, "oversubscribed: 96 vCPUs on 2 host CPUs") {
		t.Errorf("caveats %q lack oversubscription", c)
	}
}

// A matrix's shapes are its vCPU counts × its NUMA counts, cpus first; no
// NUMA counts, or an explicit layout, is one NUMA setting.
func TestAxes(t *testing.T) {
	layout := &Layout{Nodes: []NodeSpec{{CPUs: "0-1", Memory: "512M"}, {CPUs: "2-3", Memory: "512M"}}}
	for _, tc := range []struct {
		name   string
		x      Axes
		arches []string
		want   []string // the first arch's shapes: vCPUs/NUMA nodes
		count  int
	}{
		{"cpus only", Axes{CPUs: []int{1, 2}, Base: Request{Memory: "1G"}}, []string{"x86_64"}, []string{"1/0", "2/0"}, 2},
		{"cpus × numa", Axes{CPUs: []int{2, 4}, NUMA: []int{1, 2}, Base: Request{Memory: "2G"}}, []string{"x86_64", "arm64"},
			[]string{"2/0", "2/2", "4/0", "4/2"}, 8},
		{"a layout is one setting", Axes{CPUs: []int{4}, NUMA: []int{1, 2}, Base: Request{Layout: layout}}, []string{"x86_64"},
			[]string{"4/2"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shapes, err := tc.x.Shapes(tc.arches[0])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range shapes {
				got = append(got, fmt.Sprintf("%d/%d", s.CPUs, len(s.Nodes)))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("shapes %q, want %q", got, tc.want)
			}
			if n, err := tc.x.Count(tc.arches); err != nil || n != tc.count {
				t.Errorf("Count = %d, %v; want %d", n, err, tc.count)
			}
		})
	}
	if _, err := (Axes{CPUs: []int{1000}, Base: Request{Memory: "1G"}}).Count([]string{"x86_64"}); err == nil || !strings.HasPrefix(err.Error(), "x86_64: ") {
		t.Errorf("a shape the arch cannot boot: %v", err)
	}
}
