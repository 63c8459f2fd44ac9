package report

import (
	"fmt"
	"sort"
	"strings"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/variant"
)

// BenchFiles writes a run in the Go benchmark format, one file per variant
// ("baseline.txt", "patched.txt"), one line per boot and benchmark, so that
// `benchstat baseline.txt patched.txt` works on them unchanged. Each line
// carries ns/op (time per hit, all producers together: lower is better,
// which benchstat knows) and hits/s; within-boot scaling ratios follow as
// their own benchmarks.
func BenchFiles(r *results.Run) map[string]string {
	out := map[string]string{}
	// A run of several series: a file per kernel (baseline.txt, v1.txt).
	for _, v := range variant.Kernels(r.SeriesVariants()) {
		var b strings.Builder
		// The same configuration lines in both files: benchstat would split
		// its tables on any key that differs.
		fmt.Fprintf(&b, "goos: linux\npkg: lab/%s\ncpu: %s\n", r.Lab, r.Host.CPUModel)
		fmt.Fprintf(&b, "kernel: Linux %s\nseries: %s\nmode: %s\n", r.Source.Version, r.First().Name, r.First().Mode)
		var lines []string
		for _, bt := range r.Boots {
			if bt.Variant != v || !bt.OK() {
				continue
			}
			for _, res := range bt.Results {
				rate := protocol.Rate(res.Samples)
				if res.Error != "" || res.Unsupported != "" || rate == 0 {
					continue
				}
				var hits uint64
				for _, s := range res.Samples {
					hits += s.Hits
				}
				lines = append(lines, fmt.Sprintf("Benchmark%s/%s%s 	%d	%.4f ns/op	%.1f hits/s",
					camel(res.Benchmark), keys(bt, res.Producers), toolKey(res.Tool), max(hits, 1), 1e9/rate, rate))
			}
			ratios := bt.Ratios()
			sort.SliceStable(ratios, func(i, j int) bool {
				if ratios[i].Benchmark != ratios[j].Benchmark {
					return ratios[i].Benchmark < ratios[j].Benchmark
				}
				return fmt.Sprint(ratios[i].Producers) < fmt.Sprint(ratios[j].Producers)
			})
			for _, x := range ratios {
				lines = append(lines, fmt.Sprintf("Benchmark%sScaling/%s%s 	1	%.5f rate/rate-p1", camel(x.Benchmark), keys(bt, x.Producers), toolKey(x.Tool), x.Value))
			}
		}
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n")
		out[string(v)+".txt"] = b.String()
	}
	return out
}

func keys(b results.Boot, producers int) string {
	topo := fmt.Sprintf("%dcpu", b.CPUs)
	if b.Shape != nil && len(b.Shape.Nodes) > 1 {
		topo += fmt.Sprintf("-%dnode", len(b.Shape.Nodes))
	}
	return fmt.Sprintf("arch=%s/vcpus=%s/accel=%s/clock=%s/producers=%d", b.Arch, topo, b.Accel.Name, b.Clock, producers)
}

// toolKey is the benchstat key of a guest tool's figures: "" for the
// agent's, so that runs without tools keep their names.
func toolKey(tool string) string {
	if tool == "" {
		return ""
	}
	return "/tool=" + tool
}

// camel turns "uretprobe-multi-nop" into "UretprobeMultiNop".
func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "-") {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}
