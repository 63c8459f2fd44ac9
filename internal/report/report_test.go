package report

import (
	"math"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/variant"
	"lab/internal/vm"
)

// boot makes a boot whose benchmark ran at the given rates (hits/s), one
// sample per rate, with 1 s intervals except where stretched.
func boot(idx int, v variant.Variant, rates ...float64) results.Boot {
	var s []protocol.Sample
	for _, r := range rates {
		s = append(s, protocol.Sample{IntervalNS: 1e9, Hits: uint64(r), Rate: r})
	}
	return results.Boot{Index: idx, Arch: "x86_64", CPUs: 2, Variant: v, Accel: vm.Accel{Name: vm.TCG}, Clock: vm.ClockWall,
		Results: []protocol.Result{{Benchmark: "uprobe-nop", Producers: 1, Samples: s}}}
}

func TestTables(t *testing.T) {
	r := &results.Run{Lab: "t", Boots: []results.Boot{
		boot(1, variant.Baseline, 100e3, 300e3), // boot mean 200k
		boot(2, variant.Patched, 220e3),
		boot(3, variant.Baseline, 400e3), // 400k
		boot(4, variant.Patched, 180e3, 180e3),
		{Index: 5, Arch: "x86_64", CPUs: 2, Variant: variant.Baseline, Accel: vm.Accel{Name: vm.TCG}, Clock: vm.ClockWall,
			Failure: &results.Failure{Kind: vm.FailHang, Message: "deadline of 1m0s passed"}},
	}}
	tabs := Tables(r)
	if len(tabs) != 1 {
		t.Fatalf("tables = %d", len(tabs))
	}
	tb := tabs[0]
	if tb.Boots.Baseline != 2 || tb.Boots.Patched != 2 {
		t.Errorf("boots = %v (the failed boot must not count)", tb.Boots)
	}
	if len(tb.Failed) != 1 || tb.Failed[0].Kind != vm.FailHang {
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
		b.CPUs, b.Clock = 1, vm.ClockICount
	}
	out := Text(Build(&results.Run{Lab: "t", Boots: []results.Boot{b1, b2, b3, b4}}, "x", "test"), false)
	for _, want := range []string{"icount", "1.09411 ± 0.00001", "1.10619 ± 0.00001", "+1.104 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
