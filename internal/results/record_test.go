package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/topology"
)

// kindError is an error that names its kind, as vm's BootError does.
type kindError struct{ kind string }

func (e kindError) Error() string       { return "boot failed: " + e.kind }
func (e kindError) FailureKind() string { return e.kind }

// A failure's kind comes from the error that names one, wrapped or not; a
// cancelled run is an interruption; anything else is the infrastructure's.
// Only the kernel's kinds are its fault.
func TestFailureKind(t *testing.T) {
	for _, tc := range []struct {
		err    error
		kind   string
		kernel bool
	}{
		{kindError{FailPanic}, FailPanic, true},
		{fmt.Errorf("boot 3: %w", kindError{FailHang}), FailHang, true},
		{kindError{FailShape}, FailShape, true},
		{kindError{FailInfra}, FailInfra, false},
		{fmt.Errorf("boot 1: %w", kindError{FailStarved}), FailStarved, false},
		{fmt.Errorf("boot interrupted: %w", context.Canceled), FailInterrupt, false},
		{context.DeadlineExceeded, FailInterrupt, false},
		{errors.New("qemu-system-x86_64: not found"), FailInfra, false},
		{nil, "", false},
	} {
		if got := FailureKind(tc.err); got != tc.kind || KernelFault(got) != tc.kernel {
			t.Errorf("FailureKind(%v) = %q (kernel's fault %v), want %q (%v)", tc.err, got, KernelFault(got), tc.kind, tc.kernel)
		}
	}
	for _, k := range []string{FailStopped, FailProblem, FailAgent, FailExpect, FailFlood} {
		if !KernelFault(k) {
			t.Errorf("%s is not the kernel's fault", k)
		}
	}
	for _, k := range []string{FailInterrupt, FailUnknown, ""} {
		if KernelFault(k) || (&Failure{Kind: k}).KernelFault() {
			t.Errorf("%q is the kernel's fault", k)
		}
	}
	var none *Failure
	if none.KernelFault() {
		t.Error("a boot without a failure is the kernel's fault")
	}
}

// A run written as this schema reads back the same, every record type in
// it; its JSON is in snake_case, without Go's field names.
func TestWriteLoadSameRun(t *testing.T) {
	on := true
	shape, err := topology.Resolve("x86_64", topology.Request{CPUs: 2, Memory: "1G", NUMA: 2})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 1, 1, 14, 18, 5, 0, time.UTC)
	r := &Run{Lab: "t", RunID: "20260101-141805", Command: []string{"lab", "run", "labs/t.yaml"}, Started: started,
		Finished: started.Add(time.Minute), Complete: true, Elapsed: time.Minute,
		Matrix: Matrix{Arch: []string{"x86_64"}, CPUs: []int{2}, Memory: "1G", Benchmarks: []string{"uprobe-nop"},
			Producers: []int{1, 2}, ClipProducers: true, Boots: 1, Duration: 5 * time.Second, Warmup: time.Second,
			Measure: "auto", Affinity: &on, MaxActive: 32, Controls: &on, NUMA: []int{2}, Sockets: 2, Clusters: 0,
			Cores: 1, Threads: 1, Pin: "auto"},
		Claims: []Claim{{Benchmark: "uprobe-nop", Producers: []int{1}, Direction: "faster", Min: "1%", Scaling: false, Note: "cover letter"}},
		Kernels: []Kernel{{Arch: "x86_64", Variant: "baseline", Cached: true, Info: Build{Key: "k", Image: "/c/bzImage",
			Config: "/c/.config", ConfigSHA256: "cs", Release: "6.12.0", ImageSHA256: "is", BTF: "/c/btf", Compiled: 3,
			Duration: time.Minute, BuiltAt: started,
			Inputs: BuildInputs{Tree: "t", Arch: "x86_64", Fragments: []string{"common.config"}, Compiler: "gcc 12", SourceID: "git-1", Commit: "c"}}}},
		Boots: []Boot{{Index: 1, Arch: "x86_64", CPUs: 2, Variant: "baseline", Accel: Accel{Name: TCG, Reason: "no KVM"}, Clock: ClockWall,
			Shape: &shape, Failure: &Failure{Kind: FailProblem, Message: "WARNING"},
			Outcome: &Outcome{QEMU: "qemu-system-x86_64", Args: []string{"-smp", "2"}, QEMUVersion: "7.2.22",
				VCPUs:   []VCPU{{Index: 1, ThreadID: 99, Target: "x86_64", Props: VCPUProps{Socket: 1, Cluster: 0, Core: 0, Thread: 0, Node: 1}}},
				Memdevs: []Memdev{{ID: "m0", SizeMiB: 512}}, Pinned: []int{3}, Wall: time.Second, ToAgent: time.Second / 2,
				ExitCode: 0, THPOff: true, Problems: []Finding{{Line: 9, Kind: "warning", Text: "WARNING: CPU: 0"}},
				CPUSamples: []CPUSample{{Records: 1, At: time.Second, CPU: []time.Duration{time.Millisecond}}}},
			Results: []protocol.Result{{Benchmark: "uprobe-nop", Producers: 1, Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: 100, Rate: 100}}}}}},
	}
	dir := t.TempDir()
	if err := r.Save(filepath.Join(dir, "results.json")); err != nil {
		t.Fatal(err)
	}
	got, err := Load(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, r)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys(doc, "") {
		name := k[strings.LastIndex(k, ".")+1:]
		if name != strings.ToLower(name) || strings.Contains(name, "-") {
			t.Errorf("results.json has %s: want snake_case names only", k)
		}
	}
}

// keys lists every object key in a JSON document, with its path.
func keys(doc any, path string) []string {
	var out []string
	switch v := doc.(type) {
	case map[string]any:
		for k, x := range v {
			out = append(out, path+"."+k)
			out = append(out, keys(x, path+"."+k)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, keys(x, path+"[]")...)
		}
	}
	return out
}

// Schemas 0 to 2 wrote the matrix, the claims and the build inputs with
// Go's field names, durations as {"Duration": ns}, and QMP's vCPU names:
// Load reads them into this schema's records.
func TestUpgradeSchema2(t *testing.T) {
	const old = `{"schema": 2, "lab": "t", "run_id": "r",
	 "matrix": {"Arch": ["arm64"], "CPUs": [4], "Memory": "2G", "Benchmarks": ["kretprobe"], "Producers": [1, 2],
	   "ClipProducers": true, "Boots": 3, "Duration": {"Duration": 5000000000}, "Warmup": {"Duration": 1000000000},
	   "Measure": "auto", "Affinity": true, "MaxActive": 32, "Controls": false, "NUMA": null,
	   "NUMALayout": {"nodes": [{"cpus": "0-1", "memory": "1G"}, {"cpus": "2-3", "memory": "1G"}]},
	   "Sockets": 2, "Clusters": 1, "Cores": 2, "Threads": 1, "Pin": "on"},
	 "claims": [{"Benchmark": "kretprobe", "Producers": [2], "Direction": "faster", "Min": "2%", "Scaling": true, "Note": "n"}],
	 "kernels": [{"arch": "arm64", "variant": "baseline", "build": {"key": "k",
	   "inputs": {"Tree": "t", "Arch": "arm64", "Fragments": ["f"], "Compiler": "gcc", "SourceID": "s", "Commit": "c", "Mode": "apply"}}}],
	 "boots": [{"index": 1, "arch": "arm64", "variant": "baseline", "accel": {"name": "tcg", "reason": "r"},
	   "qemu": {"qemu": "q", "vcpus": [{"cpu-index": 3, "thread-id": 77, "props": {"socket-id": 1, "cluster-id": 0, "core-id": 1, "thread-id": 0, "node-id": 1}, "target": "aarch64"}]},
	   "results": [{"benchmark": "kretprobe", "producers": 1, "samples": [{"interval_ns": 1000000000, "hits": 5, "rate": 5}]}]}],
	 "bisect": {"steps": [{"index": 0, "kernel": {"arch": "arm64", "build": {"key": "k0", "inputs": {"Tree": "t0", "SourceID": "s0"}}}}, {"index": 1}]}}`
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	wantMatrix := Matrix{Arch: []string{"arm64"}, CPUs: []int{4}, Memory: "2G", Benchmarks: []string{"kretprobe"},
		Producers: []int{1, 2}, ClipProducers: true, Boots: 3, Duration: 5 * time.Second, Warmup: time.Second,
		Measure: "auto", Affinity: &yes, MaxActive: 32, Controls: &no,
		NUMALayout: &topology.Layout{Nodes: []topology.NodeSpec{{CPUs: "0-1", Memory: "1G"}, {CPUs: "2-3", Memory: "1G"}}},
		Sockets:    2, Clusters: 1, Cores: 2, Threads: 1, Pin: "on"}
	if !reflect.DeepEqual(got.Matrix, wantMatrix) {
		t.Errorf("matrix = %+v\nwant %+v", got.Matrix, wantMatrix)
	}
	wantClaims := []Claim{{Benchmark: "kretprobe", Producers: []int{2}, Direction: "faster", Min: "2%", Scaling: true, Note: "n"}}
	if !reflect.DeepEqual(got.Claims, wantClaims) {
		t.Errorf("claims = %+v, want %+v", got.Claims, wantClaims)
	}
	wantInputs := BuildInputs{Tree: "t", Arch: "arm64", Fragments: []string{"f"}, Compiler: "gcc", SourceID: "s", Commit: "c"}
	if !reflect.DeepEqual(got.Kernels[0].Info.Inputs, wantInputs) || got.Kernels[0].Info.Key != "k" {
		t.Errorf("build = %+v, want inputs %+v", got.Kernels[0].Info, wantInputs)
	}
	wantVCPU := VCPU{Index: 3, ThreadID: 77, Target: "aarch64", Props: VCPUProps{Socket: 1, Core: 1, Node: 1}}
	if o := got.Boots[0].Outcome; o == nil || len(o.VCPUs) != 1 || o.VCPUs[0] != wantVCPU || o.QEMU != "q" {
		t.Errorf("qemu = %+v, want vCPU %+v", o, wantVCPU)
	}
	if st := got.Bisect.Steps; st[0].Kernel.Info.Inputs.Tree != "t0" || st[0].Kernel.Info.Inputs.SourceID != "s0" || st[0].Kernel.Info.Key != "k0" || st[1].Kernel != nil {
		t.Errorf("bisect steps' kernels: %+v, %+v", st[0].Kernel, st[1].Kernel)
	}
	if n, err := got.Matrix.ShapeCount(); err != nil || n != 1 {
		t.Errorf("shape count of the upgraded matrix: %d, %v (want 1: one layout, one vCPU count)", n, err)
	}
}

// A claim's minimum size is a percentage; anything else is refused.
func TestMinPct(t *testing.T) {
	for _, tc := range []struct {
		min  string
		want float64
		ok   bool
	}{
		{"", 0, true}, {"2%", 2, true}, {" 1.5 % ", 1.5, true}, {"3", 3, true},
		{"-1%", 0, false}, {"two", 0, false}, {"%", 0, false},
	} {
		got, err := Claim{Min: tc.min}.MinPct()
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("MinPct(%q) = %g, %v; want %g (ok %v)", tc.min, got, err, tc.want, tc.ok)
		}
	}
}

// The shapes a recorded matrix ran: arches × vCPU counts × NUMA counts.
func TestMatrixShapeCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Matrix
		want int
	}{
		{"one shape", Matrix{Arch: []string{"x86_64"}, CPUs: []int{2}, Memory: "1G"}, 1},
		{"two arches, three cpus", Matrix{Arch: []string{"x86_64", "arm64"}, CPUs: []int{1, 2, 4}, Memory: "1G"}, 6},
		{"numa axis", Matrix{Arch: []string{"x86_64"}, CPUs: []int{4}, Memory: "2G", NUMA: []int{1, 2}}, 2},
		{"a layout is one numa setting", Matrix{Arch: []string{"x86_64"}, CPUs: []int{2}, NUMA: []int{1, 2},
			NUMALayout: &topology.Layout{Nodes: []topology.NodeSpec{{CPUs: "0", Memory: "512M"}, {CPUs: "1", Memory: "512M"}}}}, 1},
	} {
		if got, err := tc.m.ShapeCount(); err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	if _, err := (Matrix{Arch: []string{"x86_64"}, CPUs: []int{0}, Memory: "1G"}).ShapeCount(); err == nil {
		t.Error("a matrix of 0 vCPUs has shapes")
	}
}

// Every committed example (schemas 0 and 2) reads into this schema's
// records: a matrix with its durations, claims with their words, kernels
// with their build inputs, QEMU's vCPUs with their threads.
func TestExamplesUpgrade(t *testing.T) {
	paths, _ := filepath.Glob("../../results/examples/*/*/results.json")
	if len(paths) < 10 {
		t.Fatalf("found %d committed examples: want them all", len(paths))
	}
	for _, p := range paths {
		r, err := Load(p)
		if err != nil {
			t.Error(err)
			continue
		}
		m := r.Matrix
		if len(m.Arch) == 0 || len(m.CPUs) == 0 || m.Memory == "" || len(m.Benchmarks) == 0 || len(m.Producers) == 0 ||
			m.Boots < 1 || m.Duration < time.Second || m.Measure == "" {
			t.Errorf("%s: matrix %+v", p, m)
		}
		if n, err := m.ShapeCount(); err != nil || n < 1 {
			t.Errorf("%s: %d shapes, %v", p, n, err)
		}
		for _, c := range r.Claims {
			if c.Benchmark == "" || c.Direction == "" {
				t.Errorf("%s: claim %+v", p, c)
			}
		}
		for _, k := range r.Kernels {
			// The oldest files have no tree hash (their inputs were the
			// series' mode and hash, which no lab reads now).
			if in := k.Info.Inputs; in.Commit == "" || in.SourceID == "" || in.Arch != k.Arch || len(in.Fragments) == 0 || in.Compiler == "" {
				t.Errorf("%s: kernel %s/%s inputs %+v", p, k.Arch, k.Variant, in)
			}
		}
		for _, b := range r.Boots {
			if b.Outcome == nil || len(b.Outcome.VCPUs) != b.CPUs || b.Outcome.VCPUs[len(b.Outcome.VCPUs)-1].ThreadID == 0 {
				t.Errorf("%s: boot %d of %d vCPUs: qemu %+v", p, b.Index, b.CPUs, b.Outcome)
				break
			}
		}
	}
}

// TestMergedRecognisedFromOldCommand: before the merged field, only the
// command line ("lab merge ...") said that lab merge made a run.
func TestMergedRecognisedFromOldCommand(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		merged        bool
	}{
		{"lab merge", `["lab", "merge", "-o", "m", "s/*"]`, true},
		{"lab run", `["lab", "run", "labs/x.yaml"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "results.json")
			os.WriteFile(path, []byte(`{"schema": 2, "lab": "t", "run_id": "r", "command": `+tc.command+`,
			 "boots": [{"index": 1, "arch": "x86_64", "variant": "baseline", "accel": {"name": "tcg"},
			   "results": [{"benchmark": "uprobe-nop", "producers": 1, "samples": [{"interval_ns": 1000000000, "hits": 5, "rate": 5}]}]}],
			 "kernels": [{"arch": "x86_64", "variant": "baseline"}]}`), 0o644)
			got, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if (got.Merged != nil) != tc.merged {
				t.Errorf("merged = %+v, want %v", got.Merged, tc.merged)
			}
		})
	}
}
