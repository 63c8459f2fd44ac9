package main

import (
	"math"
	"os"
	"strings"
	"testing"

	"lab/initramfs/protocol"
)

// A real bench run (x86_64 guest under TCG, -w1 -d10 -a trig-uprobe-nop):
// one warm-up iteration, then eleven measured ones, as bench's summary.
func TestParseBenchOutput(t *testing.T) {
	out, err := os.ReadFile("testdata/bench-trig-uprobe-nop-w1-d10.txt")
	if err != nil {
		t.Fatal(err)
	}
	var res protocol.Result
	if err := parseBench(&res, string(out), 1); err != nil {
		t.Fatal(err)
	}
	if len(res.Warmup) != 1 || len(res.Samples) != 11 {
		t.Fatalf("%d warm-up and %d samples, want 1 and 11", len(res.Warmup), len(res.Samples))
	}
	// Iter 1 (-10484.978us): hits 0.384M/s
	s := res.Samples[0]
	if s.IntervalNS != 989515022 || s.Rate != 384000 || s.Hits != 379974 {
		t.Errorf("first sample %+v", s)
	}
	// bench's summary is the mean of the per-second figures: 0.377 M/s.
	var sum float64
	for _, s := range res.Samples {
		sum += s.Rate
	}
	if mean := sum / 11 / 1e6; math.Abs(mean-0.377) > 0.0005 {
		t.Errorf("mean %.4f M/s, bench's summary says 0.377", mean)
	}
	if r := protocol.Rate(res.Samples) / 1e6; math.Abs(r-0.377) > 0.005 {
		t.Errorf("rate %.4f M/s, bench's summary says 0.377", r)
	}
}

func TestParseBenchRefusesWhatItCannotRead(t *testing.T) {
	for name, out := range map[string]string{
		"nothing":    "",
		"libbpf":     "libbpf: failed to load BPF skeleton 'trigger_bench': -3\nfailed to load skeleton\n",
		"no summary": "Iter   0 ( 1.000us): hits    0.311M/s (  0.311M/prod), drops    0.000M/s, total operations    0.311M/s\nIter   1 ( 1.000us): hits    0.311M/s (  0.311M/prod), drops    0.000M/s, total operations    0.311M/s\n",
		"warm-up only": "Iter   0 ( 1.000us): hits    0.311M/s (  0.311M/prod), drops    0.000M/s, total operations    0.311M/s\n" +
			"Summary: hits    0.311 ± 0.000M/s (  0.311M/prod), drops    0.000 ± 0.000M/s, total operations    0.311 ± 0.000M/s\n",
		"drops": strings.ReplaceAll("Iter   1 ( 1.000us): hits    0.311M/s (  0.311M/prod), drops    0.002M/s, total operations    0.313M/s\n"+
			"Summary: hits    0.311 ± 0.000M/s (  0.311M/prod), drops    0.002 ± 0.000M/s, total operations    0.313 ± 0.000M/s\n", "\t", ""),
	} {
		var res protocol.Result
		if err := parseBench(&res, out, 1); err == nil {
			t.Errorf("%s: parsed as %+v", name, res)
		}
	}
}

func TestToolArgsMirrorTheJob(t *testing.T) {
	job := protocol.Job{WarmupSamples: 2, Samples: 10, Affinity: true}
	args, ok := toolArgs("bpf-bench", "uretprobe-push", 4, job)
	if want := "-w 2 -d 10 -p 4 -a trig-uretprobe-push"; !ok || strings.Join(args, " ") != want {
		t.Errorf("args %q, want %q", args, want)
	}
	if _, ok := toolArgs("bpf-bench", "kretprobe-flock", 1, job); ok {
		t.Error("kretprobe-flock has no upstream benchmark, but bench was asked for it")
	}
}

// bench samples once a second: a job of shorter samples is refused before
// bench runs, not measured at a length it did not ask for.
func TestToolRefusesShortSamples(t *testing.T) {
	res := runTool("bpf-bench", "uprobe-nop", 1, protocol.Job{Samples: 1, SampleMS: 500}, []string{"-d", "1", "trig-uprobe-nop"})
	if !strings.Contains(res.Error, "once a second, not every 500ms") {
		t.Errorf("error %q, want bench's one-second samples named", res.Error)
	}
}
