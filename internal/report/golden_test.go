package report

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/stackprof"
	"lab/internal/topology"
	"lab/internal/variant"
	"lab/internal/verdict"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeRun is a run with known figures: 5 interleaved boots per variant on
// 2 vCPUs, where patched uprobe-nop is 10 % faster at 1 producer and
// scales better, uretprobe-nop is unchanged, and the controls stay put.
func fakeRun() *results.Run {
	shape, _ := topology.Resolve("x86_64", topology.Request{CPUs: 2, Memory: "1G"})
	r := &results.Run{Lab: "fake", RunID: "20260101-000000", LabVersion: "abc1234", Command: []string{"lab", "run", "labs/fake.yaml", "--boots", "5"},
		Complete: true, Source: results.Source{Desc: "Debian linux-source-6.12", Version: "6.12.117", Commit: "1cdbf2748d82933e55c97470b512d4ec3e726f4d"},
		Series: []results.Series{{Name: "fake", Mode: "revert", Hash: strings.Repeat("ab", 32), Patches: []results.Patch{{Name: "0001-x.patch", Subject: "x: y", SHA256: strings.Repeat("cd", 32)}}, Variant: variant.Patched}},
		Host:   results.Host{CPUModel: "Test CPU", CPUs: 2, Kernel: "6.1.0"},
		Claims: []results.Claim{
			{Benchmark: "uprobe-nop", Producers: []int{1}, Direction: "faster"},
			{Benchmark: "uprobe-nop", Producers: []int{2}, Direction: "faster", Scaling: true},
			{Benchmark: "uretprobe-nop", Producers: []int{1}, Direction: "faster", Min: "2%"},
			{Benchmark: "uprobe-nop", Producers: []int{64}, Direction: "faster"},
		}}
	res := func(bench string, p int, rate float64) protocol.Result {
		return protocol.Result{Benchmark: bench, Producers: p,
			Warmup:  []protocol.Sample{{IntervalNS: 1e9, Hits: uint64(rate), Rate: rate}},
			Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: uint64(rate), Rate: rate}}}
	}
	for i := 0; i < 10; i++ {
		v, k := variant.Baseline, 1.0
		if i%2 == 1 {
			v, k = variant.Patched, 1.10
		}
		j := float64(i / 2) // boot-to-boot spread, the same for both variants
		b := results.Boot{Index: i + 1, Arch: "x86_64", CPUs: 2, Variant: v, Accel: results.Accel{Name: results.TCG, Reason: "test"}, Clock: results.ClockWall,
			Shape: &shape, Outcome: &results.Outcome{QEMU: "qemu-system-x86_64", Args: []string{"-M", "q35", "-smp", "2"}, QEMUVersion: "7.2.22", THPOff: true},
			Results: []protocol.Result{
				res("uprobe-nop", 1, (500e3+1e3*j)*k),
				res("uprobe-nop", 2, (800e3+1e3*j)*k*k),
				res("uretprobe-nop", 1, 300e3+1e3*j+float64(i%2)*500),
				res("uretprobe-nop", 2, 500e3+1e3*j),
				res("usermode-count", 1, 50e6+1e4*j),
				res("usermode-count", 2, 100e6+1e4*j),
			}}
		r.Boots = append(r.Boots, b)
	}
	return r
}

// icountRun is a run under icount at 1 vCPU, 2 seeds per kernel: uprobe-nop
// 1.164 % faster, uretprobe-nop 0.004 % (within the floor), the controls
// within a millionth, each seed a hair apart.
func icountRun() *results.Run {
	r := fakeRun()
	shape, _ := topology.Resolve("x86_64", topology.Request{CPUs: 1, Memory: "1G"})
	r.Boots = nil
	res := func(bench string, rate float64) protocol.Result {
		// A long interval keeps the rate's digits in the hit count.
		return protocol.Result{Benchmark: bench, Producers: 1, Samples: []protocol.Sample{{IntervalNS: 1e12, Hits: uint64(rate * 1e3), Rate: rate}}}
	}
	for i := 0; i < 4; i++ {
		v, k, u := variant.Baseline, 1.0, 1.0
		if i%2 == 1 {
			v, k, u = variant.Patched, 1.01164, 1.00004
		}
		seed := 1 + i/2
		j := 1 + 1e-6*float64(seed-1) // a seed's own stream, 0.0001 % apart
		r.Boots = append(r.Boots, results.Boot{Index: i + 1, Round: i / 2, Seed: seed, Arch: "x86_64", CPUs: 1, Variant: v,
			Accel: results.Accel{Name: results.TCG, Reason: "test"}, Clock: results.ClockICount, Shape: &shape,
			Outcome: &results.Outcome{QEMU: "qemu-system-x86_64", Args: []string{"-M", "q35", "-icount", "shift=0,sleep=off", "-seed", fmt.Sprint(seed)}, QEMUVersion: "7.2.22"},
			Hello:   &protocol.Hello{Method: "producer-program, 250ms samples"},
			Results: []protocol.Result{res("uprobe-nop", 1.14984e6*k*j), res("uretprobe-nop", 0.62065e6*u*j),
				res("usermode-count", 197.99968e6*j), res("syscall-count", 5.74301e6*j)}})
	}
	// Each kernel's instruction profile: the patched one's uprobe hit
	// leaves the lock out.
	prof := func(v variant.Variant, lock, notify uint64) results.Profile {
		fs := []results.FunctionCount{{Name: "uprobe_notify_resume", Instructions: notify}, {Name: "[user]", Instructions: 5_120_000}}
		if lock > 0 {
			fs = append(fs, results.FunctionCount{Name: "_raw_read_lock", Instructions: lock})
		}
		var total uint64
		for _, f := range fs {
			total += f.Instructions
		}
		return results.Profile{Arch: "x86_64", Variant: v, Topology: "1 vCPU", Seed: 1, Same: true,
			Results: []results.ProfileResult{{Benchmark: "uprobe-nop", Producers: 1, Ops: 1_000_000, Instructions: total, Functions: fs}}}
	}
	r.Profiles = []results.Profile{prof(variant.Baseline, 6_000_000, 858_760_000), prof(variant.Patched, 0, 854_755_000)}
	return r
}

// sampledRun is fakeRun with each kernel's sampled profile (the wall
// clock's): on the patched kernel the uprobe hit's read lock is gone and
// the loop has more of the samples; uretprobe-nop, which did not move,
// moved in no share beyond the noise.
func sampledRun() *results.Run {
	r := fakeRun()
	prof := func(v variant.Variant, lock, user uint64) results.Profile {
		const samples = 2000
		probe := samples - lock - user
		fs := []results.FunctionCount{{Name: "[user]", Self: user, Children: user},
			{Name: "uprobe_notify_resume", Self: probe, Children: probe + lock}, {Name: "asm_exc_int3", Children: probe + lock}}
		if lock > 0 {
			fs = append(fs, results.FunctionCount{Name: "_raw_read_lock", Self: lock, Children: lock})
		}
		ret := []results.FunctionCount{{Name: "[user]", Self: 1000, Children: 1000}, {Name: "uprobe_notify_resume", Self: 1000, Children: 1000}}
		return results.Profile{Method: stackprof.Method, Arch: "x86_64", Variant: v, Topology: "2 vCPUs", Same: true,
			Results: []results.ProfileResult{
				{Benchmark: "uprobe-nop", Producers: 1, Ops: 500_000, Samples: samples, Event: "cpu-clock", Hz: 997, Functions: fs},
				{Benchmark: "uretprobe-nop", Producers: 1, Ops: 300_000, Samples: 2000, Event: "cpu-clock", Hz: 997, Functions: ret},
			}}
	}
	r.Profiles = []results.Profile{prof(variant.Baseline, 60, 400), prof(variant.Patched, 0, 520)}
	return r
}

// onlyPatched is fakeRun as run with --only patched.
func onlyPatched() *results.Run {
	r := fakeRun()
	var keep []results.Boot
	for _, b := range r.Boots {
		if b.Variant == variant.Patched {
			keep = append(keep, b)
		}
	}
	r.Boots = keep
	return r
}

// Every format of every shape of report, each against its golden files:
// one series, several series, one variant (--only) and two runs compared
// (lab compare). The four go down one path, so a change meant for one
// shows in the others' files too.
func TestGoldenFormats(t *testing.T) {
	twoRuns := func() (*Document, *results.Run) {
		a, b := fakeRun(), fakeRun()
		b.RunID = "20260102-000000"
		for i := range b.Boots {
			for j := range b.Boots[i].Results {
				s := &b.Boots[i].Results[j].Samples[0]
				s.Hits, s.Rate = s.Hits*2, s.Rate*2
			}
		}
		return BuildCompare(a, b, "results/fake/A", "results/fake/B", variant.Patched, "test"), nil
	}
	for _, tc := range []struct {
		name string
		doc  func() (*Document, *results.Run)
	}{
		{"fake", func() (*Document, *results.Run) {
			r := fakeRun()
			return Build(r, "results/fake/20260101-000000", "test"), r
		}},
		{"several", func() (*Document, *results.Run) {
			r := severalRun(1.1)
			return Build(r, "results/fake/20260101-000000", "test"), r
		}},
		{"only", func() (*Document, *results.Run) {
			r := onlyPatched()
			return Build(r, "results/fake/20260101-000000", "test"), r
		}},
		{"compare", twoRuns},
		{"sampled", func() (*Document, *results.Run) {
			r := sampledRun()
			return Build(r, "results/fake/20260101-000000", "test"), r
		}},
		{"icount", func() (*Document, *results.Run) {
			r := icountRun()
			return Build(r, "results/fake/20260101-000000", "test"), r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, r := tc.doc()
			checkGolden(t, tc.name, d, r)
		})
	}
}

func checkGolden(t *testing.T, prefix string, d *Document, r *results.Run) {
	t.Helper()
	files, err := Files(d, r)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range files {
		if !strings.HasPrefix(name, "report") && prefix != "fake" {
			continue // benchstat's files: BenchFiles has tests of its own
		}
		golden := filepath.Join("testdata", prefix+"."+name)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from %s (go test ./internal/report -update, then review the diff):\n%s", name, golden, firstDiff(string(want), string(got)))
		}
	}
	for _, line := range strings.Split(string(files["report-80.txt"]), "\n") {
		if len([]rune(line)) > 80 {
			t.Errorf("report-80.txt has a line of %d columns: %q", len([]rune(line)), line)
		}
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\nwant %q\n got %q", i+1, a, b)
		}
	}
	return ""
}

func TestClaimsVerdicts(t *testing.T) {
	d := Build(fakeRun(), "x", "test")
	want := []string{verdict.Reproduced, verdict.Reproduced, verdict.NotShown, verdict.NotMeasured}
	for i, c := range d.Claims {
		if c.Verdict != want[i] {
			t.Errorf("claim %q: %s, want %s (%+v)", verdict.ClaimText(c.Claim), c.Verdict, want[i], c.Checks)
		}
	}
	if ok, bad := verdict.ClaimsOK(d.Claims); ok || len(bad) != 2 {
		t.Errorf("ClaimsOK = %v, %v", ok, bad)
	}
	// The same data read the other way round contradicts the claims.
	r := fakeRun()
	for i := range r.Boots {
		if r.Boots[i].Variant == variant.Baseline {
			r.Boots[i].Variant = variant.Patched
		} else {
			r.Boots[i].Variant = variant.Baseline
		}
	}
	d = Build(r, "x", "test")
	if d.Claims[0].Verdict != verdict.Contradicts {
		t.Errorf("swapped variants: %s, want %s", d.Claims[0].Verdict, verdict.Contradicts)
	}
	if reg := verdict.Regressions(d.Tables); len(reg) != 3 {
		t.Errorf("regressions %v, want uprobe-nop at p=1 and p=2 and its scaling", reg)
	}
}

// lab compare: run A's patched boots against run B's, here with B faster,
// and run B under another accelerator, which the table must say.
func TestCompareRuns(t *testing.T) {
	a, b := fakeRun(), fakeRun()
	b.RunID = "20260102-000000"
	b.Source.Version, b.Source.ID = "6.12.999", "tarball-other"
	for i := range b.Boots {
		b.Boots[i].Accel.Name = results.KVM
		for j := range b.Boots[i].Results {
			s := &b.Boots[i].Results[j].Samples[0]
			s.Hits *= 2
			s.Rate *= 2
		}
	}
	d := BuildCompare(a, b, "A", "B", variant.Patched, "test")
	if len(d.Tables) != 1 || len(d.Runs) != 2 {
		t.Fatalf("%d tables, %d runs", len(d.Tables), len(d.Runs))
	}
	if len(d.Caveats) == 0 || !strings.Contains(d.Caveats[0], "Linux 6.12.117 against Linux 6.12.999") {
		t.Errorf("caveats %q: the two runs' point releases differ and the report must say so first", d.Caveats)
	}
	tb := d.Tables[0]
	if tb.Shape.Accel.Baseline != results.TCG || tb.Shape.Accel.Patched != results.KVM {
		t.Errorf("accelerators %+v, want each side's own", tb.Shape.Accel)
	}
	if h := Header(d.Lab, tb); !strings.Contains(h, "accelerators TCG (baseline column) vs KVM (patched column)") {
		t.Errorf("header %q does not name both accelerators", h)
	}
	if tb.Boots.Baseline != 5 || tb.Boots.Patched != 5 {
		t.Errorf("boots %v", tb.Boots)
	}
	for _, r := range tb.Rows {
		if r.Change.Verdict != "faster" || r.Change.Pct < 99 || r.Change.Pct > 101 {
			t.Errorf("%s p=%d: %+v, want +100 %%", r.Benchmark, r.Producers, r.Change)
		}
	}
}

// A run of one variant (--only patched) still gets every report.
func TestOneVariantReports(t *testing.T) {
	r := fakeRun()
	var keep []results.Boot
	for _, b := range r.Boots {
		if b.Variant == variant.Patched {
			keep = append(keep, b)
		}
	}
	r.Boots = keep
	d := Build(r, "x", "test")
	files, err := Files(d, r)
	if err != nil {
		t.Fatal(err)
	}
	// Only the patched columns: no empty baseline, no change without a side
	// to compare with.
	md := string(files["report.md"])
	if strings.Contains(md, "baseline M/s") || strings.Contains(md, "Δ [95% CI]") || !strings.Contains(md, "patched M/s") {
		t.Errorf("one-variant table:\n%s", md)
	}
	if !strings.Contains(d.Tables[0].Shape.Accel.Baseline, results.TCG) {
		t.Errorf("a side without boots names no accelerator: %+v", d.Tables[0].Shape)
	}
}
