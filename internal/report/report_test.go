package report

import (
	"math"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/benchmark"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// boot makes a boot whose benchmark ran at the given rates (hits/s), one
// sample per rate, with 1 s intervals except where stretched.
func boot(idx int, v variant.Variant, rates ...float64) results.Boot {
	var s []protocol.Sample
	for _, r := range rates {
		s = append(s, protocol.Sample{IntervalNS: 1e9, Hits: uint64(r), Rate: r})
	}
	return results.Boot{Index: idx, Arch: "x86_64", CPUs: 2, Variant: v, Accel: results.Accel{Name: results.TCG}, Clock: results.ClockWall,
		Results: []protocol.Result{{Benchmark: "uprobe-nop", Producers: 1, Samples: s}}}
}

func TestTables(t *testing.T) {
	r := &results.Run{Lab: "t", Boots: []results.Boot{
		boot(1, variant.Baseline, 100e3, 300e3), // boot mean 200k
		boot(2, variant.Patched, 220e3),
		boot(3, variant.Baseline, 400e3), // 400k
		boot(4, variant.Patched, 180e3, 180e3),
		{Index: 5, Arch: "x86_64", CPUs: 2, Variant: variant.Baseline, Accel: results.Accel{Name: results.TCG}, Clock: results.ClockWall,
			Failure: &results.Failure{Kind: results.FailHang, Message: "deadline of 1m0s passed"}},
	}}
	tabs := verdict.Tables(r)
	if len(tabs) != 1 {
		t.Fatalf("tables = %d", len(tabs))
	}
	tb := tabs[0]
	if tb.Boots.Baseline != 2 || tb.Boots.Patched != 2 {
		t.Errorf("boots = %v (the failed boot must not count)", tb.Boots)
	}
	if len(tb.Failed) != 1 || tb.Failed[0].Kind != results.FailHang {
		t.Errorf("failed boots %+v", tb.Failed)
	}
	base, pat := tb.Rows[0].Variants.Baseline, tb.Rows[0].Variants.Patched
	if base.Values[0] != 200e3 || base.Values[1] != 400e3 {
		t.Errorf("per-boot values %v, want boot order 200k, 400k", base.Values)
	}
	if base.Mean != 300e3 || math.Abs(base.Stddev-math.Sqrt(2)*100e3) > 1e-6 {
		t.Errorf("baseline = %+v, want mean 300k, sd 141.4k", base)
	}
	if pat.Mean != 200e3 {
		t.Errorf("patched mean = %v", pat.Mean)
	}
	out := Text(Build(r, "x", "test"), false)
	for _, want := range []string{
		"t · x86_64 · 2 vCPUs · TCG (emulated: absolute figures are not hardware figures) · wall clock · 2 boots each",
		"0.300 ± 0.141 (0.300/prod)", "0.200 ± 0.028 (0.200/prod)", "-33.3 %",
		"failed: boot 5 (baseline): hang: deadline of 1m0s passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A stretched interval (steal, a slow guest clock) weighs as long as it lasted.
func TestMeanRateUsesMeasuredIntervals(t *testing.T) {
	s := []protocol.Sample{{IntervalNS: 1e9, Hits: 100}, {IntervalNS: 3e9, Hits: 100}}
	if got := protocol.Rate(s); got != 50 {
		t.Errorf("Rate = %v, want 50 hits/s", got)
	}
}

func TestSingleBootShowsNoSpread(t *testing.T) {
	r := &results.Run{Lab: "t", Boots: []results.Boot{boot(1, variant.Baseline, 1e6), boot(2, variant.Patched, 2e6)}}
	out := Text(Build(r, "x", "test"), false)
	if strings.Contains(out, "±") {
		t.Errorf("one boot each must not show a spread:\n%s", out)
	}
	if !strings.Contains(out, "+100.0 %") {
		t.Errorf("want +100.0 %%:\n%s", out)
	}
}

func TestICountShowsMoreDigits(t *testing.T) {
	b1, b2 := boot(1, variant.Baseline, 1094100), boot(2, variant.Patched, 1106200)
	b3, b4 := boot(3, variant.Baseline, 1094120), boot(4, variant.Patched, 1106180)
	for _, b := range []*results.Boot{&b1, &b2, &b3, &b4} {
		b.CPUs, b.Clock = 1, results.ClockICount
	}
	out := Text(Build(&results.Run{Lab: "t", Boots: []results.Boot{b1, b2, b3, b4}}, "x", "test"), false)
	for _, want := range []string{"icount", "1.09411 ± 0.00001", "1.10619 ± 0.00001", "+1.104 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// Boots from two hosts, one 30 % faster: judged on pairs, the series' 3 %
// shows; the hosts' spread is in the notes.
func TestPairedAcrossHosts(t *testing.T) {
	fast, slow := &results.Host{Name: "fast"}, &results.Host{Name: "slow"}
	var boots []results.Boot
	for i := 0; i < 12; i++ {
		h, speed := fast, 1.3
		if i >= 6 {
			h, speed = slow, 1.0
		}
		round := i % 6
		jitter := 1 + 0.002*float64(round%3)
		b := boot(2*i+1, variant.Baseline, 1e6*speed*jitter)
		p := boot(2*i+2, variant.Patched, 1.03e6*speed*jitter)
		b.Round, p.Round = round, round
		b.Host, p.Host = h, h
		boots = append(boots, b, p)
	}
	tb := verdict.Tables(&results.Run{Lab: "t", Boots: boots})[0]
	if !tb.Paired || len(tb.Hosts) != 2 || len(tb.PerHost) != 2 {
		t.Fatalf("paired %v, hosts %v, per host %v", tb.Paired, tb.Hosts, tb.PerHost)
	}
	c := tb.Rows[0].Change
	if c.Verdict != "faster" || c.Pct < 2.9 || c.Pct > 3.1 {
		t.Errorf("paired change %+v, want +3 %%", c)
	}
	if c.Lo < 2.5 {
		t.Errorf("paired interval [%.2f, %.2f]: pairs divide the hosts out", c.Lo, c.Hi)
	}
	if unpaired := stats.Compare(tb.Rows[0].Variants.Baseline.Values, tb.Rows[0].Variants.Patched.Values, 0); unpaired.Lo > 0 {
		t.Errorf("unpaired %+v: the hosts' 30 %% should make its interval cover 0", unpaired)
	}
	if notes := strings.Join(Notes(tb), "\n"); !strings.Contains(notes, "fast: 6 pairs") || strings.Contains(notes, "Mann-Whitney") {
		t.Errorf("notes: %v", Notes(tb))
	}
}

// A wall-clock result whose producers' vCPUs did not each get most of a host
// CPU is named in a caveat: contention cannot build when producers take turns.
func TestStarvedVCPUs(t *testing.T) {
	mk := func(idx int, v variant.Variant, share ...float64) results.Boot {
		b := boot(idx, v, 100e3)
		b.Results = append(b.Results, protocol.Result{Benchmark: "uprobe-nop", Producers: 2, VCPUHostShare: share,
			Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: 150e3, Rate: 150e3}}})
		return b
	}
	r := &results.Run{Lab: "t", Boots: []results.Boot{
		mk(1, variant.Baseline, 0.97, 0.95), mk(2, variant.Patched, 0.51, 0.96), mk(3, variant.Baseline), mk(4, variant.Patched, 0.9, 0.88),
	}}
	tb := verdict.Tables(r)[0]
	if len(tb.Starved) != 1 || tb.Starved[0] != "boot 2 uprobe-nop p=2: 0.51, 0.96" {
		t.Errorf("starved = %q, want boot 2 alone", tb.Starved)
	}
	doc := Build(r, "x", "test")
	found := false
	for _, c := range doc.Caveats {
		found = found || strings.Contains(c, "in 1 result(s) a producer's vCPU got less than 0.75 of a host CPU (boot 2 uprobe-nop p=2: 0.51, 0.96")
	}
	if !found {
		t.Errorf("no caveat names the starved result: %q", doc.Caveats)
	}
}

// bench prints M/s to three decimals: its rows (and agent ÷ bench) cannot
// show a change smaller than one step, however tight their spread; the
// agent's own rows keep the icount floor.
func TestToolResolution(t *testing.T) {
	var boots []results.Boot
	for i := 0; i < 8; i++ {
		v, agent, bench := variant.Baseline, 1.10000e6, 1.115e6
		if i%2 == 1 {
			// The agent sees +0.1 %, beyond the icount floor; bench's
			// printed figure moves by one step, +0.09 %.
			v, agent, bench = variant.Patched, 1.1011e6, 1.116e6
		}
		b := boot(i+1, v, agent)
		b.CPUs, b.Clock = 1, results.ClockICount
		b.Results = append(b.Results,
			protocol.Result{Benchmark: "uprobe-nop", Producers: 1, Tool: benchmark.BPFBench, Samples: []protocol.Sample{{IntervalNS: 1e9, Hits: uint64(bench), Rate: bench}}})
		boots = append(boots, b)
	}
	tb := verdict.Tables(&results.Run{Lab: "t", Boots: boots})[0]
	got := map[string]stats.Change{}
	for _, r := range append(tb.Rows, tb.Scaling...) {
		got[r.Label()] = r.Change
	}
	for label, want := range map[string]string{"uprobe-nop (agent) p=1": "faster", "uprobe-nop (bench) p=1": stats.Same, "uprobe-nop p1 agent ÷ bench": stats.Same} {
		c, ok := got[label]
		if !ok {
			t.Fatalf("no row %q in %v", label, got)
		}
		if c.Verdict != want {
			t.Errorf("%s: %+v, want %s", label, c, want)
		}
	}
	if c := got["uprobe-nop (bench) p=1"]; !strings.Contains(c.Why, "one step") || c.Lo > 0.001 || c.Hi < 0.179 {
		t.Errorf("bench row's change %+v: want its interval widened by a step (0.09 %%) each side, and why", c)
	}
	if notes := strings.Join(Notes(tb), "\n"); !strings.Contains(notes, "rounds its rates to 0.001 M/s") || !strings.Contains(notes, "(up to 0.090 %)") {
		t.Errorf("notes lack the rounding:\n%s", notes)
	}
}

// Results measured without a warm-up are named in a caveat, and only they.
func TestWarmupCaveat(t *testing.T) {
	warm := func(b results.Boot) results.Boot {
		b.Results[0].Warmup = []protocol.Sample{{IntervalNS: 1e9, Hits: 1, Rate: 1}}
		return b
	}
	for _, tc := range []struct {
		name  string
		boots []results.Boot
		want  string
	}{
		{"all warmed up", []results.Boot{warm(boot(1, variant.Baseline, 1e5)), warm(boot(2, variant.Patched, 1e5))}, ""},
		{"one cold", []results.Boot{warm(boot(1, variant.Baseline, 1e5)), boot(2, variant.Patched, 1e5)}, "1 result(s) had no warm-up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := Build(&results.Run{Lab: "t", Boots: tc.boots}, "x", "test")
			var got []string
			for _, c := range doc.Caveats {
				if strings.Contains(c, "warm-up") {
					got = append(got, c)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("caveats %q, want none about warm-up", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("caveats %q, want one with %q", got, tc.want)
			}
		})
	}
}
