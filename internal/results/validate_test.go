package results

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"lab/initramfs/protocol"
	"lab/internal/variant"
)

// TestExamplesLoad: every committed run under results/examples/ is a lab
// run, and stays one whatever Load comes to refuse.
func TestExamplesLoad(t *testing.T) {
	paths, err := filepath.Glob("../../results/examples/*/*/results.json")
	if err != nil || len(paths) < 10 {
		t.Fatalf("found %d committed examples (%v): want them all", len(paths), err)
	}
	for _, p := range paths {
		if _, err := Load(p); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// goodRun is a small run that Load accepts: two boots of each variant.
func goodRun() *Run {
	r := &Run{Lab: "t", RunID: "20260101-000000", Command: []string{"lab", "run", "labs/t.yaml"},
		Series:  []Series{{Variant: variant.Patched, Variants: variant.Pair[string]{Baseline: "b0", Patched: "p0"}}},
		Kernels: []Kernel{{Arch: "x86_64", Variant: variant.Baseline}, {Arch: "x86_64", Variant: variant.Patched}}}
	for i, v := range []variant.Variant{variant.Baseline, variant.Patched, variant.Baseline, variant.Patched} {
		r.Boots = append(r.Boots, Boot{Index: i + 1, Round: i / 2, Arch: "x86_64", CPUs: 1, Variant: v,
			Results: []protocol.Result{res("uprobe-nop", 1, 1000, 1010), res("usermode-count", 1, 5000, 5000)}})
	}
	for _, b := range r.Boots {
		for _, res := range b.Results {
			for i := range res.Samples {
				res.Samples[i].Rate = float64(res.Samples[i].Hits) // hits a second: 1 s samples
			}
		}
	}
	return r
}

// TestLoadRefusesWhatNoRunWrites: a results.json that parses, but holds
// what no lab run writes, is refused with the file named and what is wrong
// said, rather than reported as figures.
func TestLoadRefusesWhatNoRunWrites(t *testing.T) {
	// multi makes the run one of two series, v1 and v2: the patched boots
	// become v1's, and two boots of v2 are added.
	multi := func(r *Run) {
		r.Series = []Series{{Name: "s", Variant: "v1"}, {Name: "s", Variant: "v2"}}
		for i := range r.Boots {
			if r.Boots[i].Variant == variant.Patched {
				r.Boots[i].Variant = "v1"
			}
		}
		var ks []Kernel
		for _, k := range r.Kernels {
			if k.Variant == variant.Patched {
				k.Variant = "v1"
				ks = append(ks, k)
				k.Variant = "v2"
			}
			ks = append(ks, k)
		}
		r.Kernels = ks
		for _, b := range r.Boots[:2] {
			b.Index += len(r.Boots)
			b.Variant = "v2"
			b.Results = slices.Clone(b.Results)
			for j := range b.Results {
				b.Results[j].Samples = slices.Clone(b.Results[j].Samples)
			}
			r.Boots = append(r.Boots, b)
		}
	}
	zero := func(r *Run, v variant.Variant) {
		for i := range r.Boots {
			if r.Boots[i].Variant != v {
				continue
			}
			for j := range r.Boots[i].Results {
				for k := range r.Boots[i].Results[j].Samples {
					r.Boots[i].Results[j].Samples[k].Hits, r.Boots[i].Results[j].Samples[k].Rate = 0, 0
				}
			}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(r *Run)
		want string // "" for a run Load accepts
	}{
		{"a good run", func(r *Run) {}, ""},
		{"one zero result is a figure", func(r *Run) { r.Boots[1].Results[0].Samples[0] = protocol.Sample{IntervalNS: 1e9} }, ""},
		{"a failed boot without results", func(r *Run) { r.Boots[3].Results = nil; r.Boots[3].Failure = &Failure{Kind: "panic"} }, ""},
		{"an unsupported result without samples", func(r *Run) {
			r.Boots[0].Results[0] = protocol.Result{Benchmark: "uprobe-nop", Producers: 1, Unsupported: "no uprobes"}
		}, ""},
		{"--only baseline", func(r *Run) {
			r.Command = append(r.Command, "--only", "baseline")
			r.Boots = []Boot{r.Boots[0], r.Boots[2]}
		}, ""},
		{"a bisect's middle step", func(r *Run) {
			r.Bisect = &Bisect{}
			r.Boots = append(r.Boots, Boot{Index: 5, Arch: "x86_64", Results: r.Boots[0].Results})
		}, ""},
		{"a run of two series", func(r *Run) { multi(r) }, ""},

		{"every sample zero", func(r *Run) { zero(r, variant.Baseline); zero(r, variant.Patched) }, "every sample of the 2 baseline boots that delivered is zero"},
		{"every patched sample zero", func(r *Run) { zero(r, variant.Patched) }, "every sample of the 2 patched boots that delivered is zero"},
		{"a result without samples", func(r *Run) { r.Boots[2].Results[1].Samples = nil }, "boot 3 (x86_64, baseline): usermode-count at 1 producers ran but has no samples"},
		{"every sample empty", func(r *Run) {
			for i := range r.Boots {
				for j := range r.Boots[i].Results {
					r.Boots[i].Results[j].Samples = []protocol.Sample{}
				}
			}
		}, "boot 1 (x86_64, baseline): uprobe-nop at 1 producers ran but has no samples"},
		{"variant foo", func(r *Run) { r.Boots[1].Variant = "foo" }, `boot 2 is of variant "foo": this run boots baseline, patched only`},
		{"no variant", func(r *Run) { r.Boots[1].Variant = "" }, "boot 2 has no variant"},
		{"patched in a --only baseline run", func(r *Run) { r.Command = append(r.Command, "--only=baseline") }, "boot 2 is of patched, which this run does not have (it booted baseline only: --only baseline)"},
		{"patched without a patched commit", func(r *Run) { r.Series[0].Variants.Patched = "" }, "boot 2 is of patched, which this run does not have (its series has no patched commit in variant_commits)"},
		{"a kernel the run did not build", func(r *Run) { r.Boots[0].Arch = "arm64" }, "boot 1 is of the arm64 baseline kernel, which the run did not build (its kernels: x86_64 baseline, x86_64 patched)"},
		{"a patched boot in a run of two series", func(r *Run) { multi(r); r.Boots[5].Variant = variant.Patched }, `boot 7 is of variant "patched": this run boots baseline, v1, v2 only`},
		{"two series of one name", func(r *Run) { multi(r); r.Series[1].Variant = "v1" }, "series[1] (s): variant v1 names two series"},
		{"a series named baseline", func(r *Run) { multi(r); r.Series[0].Variant = "baseline" }, `series[0] (s): variant name "baseline"`},
		{"every v2 sample zero", func(r *Run) { multi(r); zero(r, "v2") }, "every sample of the 2 v2 boots that delivered is zero"},
		{"an index twice", func(r *Run) { r.Boots[2].Index = 2 }, "boot 2 is there twice"},
		{"index 0", func(r *Run) { r.Boots[0].Index = 0 }, "a boot has index 0: boots are numbered from 1"},
		{"a result without a benchmark", func(r *Run) { r.Boots[0].Results[1].Benchmark = "" }, "boot 1 (x86_64, baseline): a result names no benchmark"},
		{"hits without a rate", func(r *Run) { r.Boots[2].Results[0].Samples[1].Rate = 0 }, "boot 3 (x86_64, baseline): uprobe-nop at 1 producers has a sample of 1010 hits at rate 0"},
		{"a rate without hits", func(r *Run) { r.Boots[3].Results[1].Samples[0].Hits = 0 }, "boot 4 (x86_64, patched): usermode-count at 1 producers has a sample of 0 hits at rate 5000"},
		{"a negative rate", func(r *Run) { r.Boots[0].Results[0].Samples[0].Rate = -1 }, "has a sample of 1000000000 ns at rate -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := goodRun()
			tc.edit(r)
			dir := t.TempDir()
			if err := r.Save(filepath.Join(dir, "results.json")); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "results.json")
			_, err := Load(path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("loaded; want it refused with %q", tc.want)
			case !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.want):
				t.Errorf("message %q: want %s: ... %q", err, path, tc.want)
			}
		})
	}
}

// TestDecodeSaysWhatIsWrong: a file that is not a results.json is named in
// JSON's terms and lab's, never in Go's.
func TestDecodeSaysWhatIsWrong(t *testing.T) {
	noise := regexp.MustCompile(`  |: holds| a [aeiou]|<nil>|%!|Go |struct|time\.|2006|\[\]|int64|float64|uint64`)
	for _, tc := range []struct{ json, want string }{
		{`[1, 2, 3]`, "not a lab results file: the file is an array, not an object of lab's fields"},
		{`"results"`, "the file is a string"},
		{`true`, "the file is a boolean"},
		{`{"lab": "t", "boots": {}}`, "boots holds an object, which lab never writes there"},
		{`{"lab": "t", "boots": [{"index": 1.5}]}`, "boots.index holds a number 1.5"},
		{`{"lab": "t", "complete": "yes"}`, "complete holds a string"},
		{`{"lab": "t", "started": "yesterday"}`, `"yesterday" is not a time as lab writes one (e.g. 2026-01-01T14:18:05Z)`},
		{`{"lab": "t",}`, "not JSON (at byte 13: invalid character '}'"},
		{`{"lab": "t", "boots": [`, "cut off after 23 bytes"},
	} {
		p := filepath.Join(t.TempDir(), "results.json")
		if err := os.WriteFile(p, []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.json, err, tc.want)
			continue
		}
		if m := noise.FindString(strings.TrimPrefix(err.Error(), p)); m != "" {
			t.Errorf("%s: %q shows %q", tc.json, err, m)
		}
	}
}

// TestLoadUnreadable: a results.json that cannot be read says so once,
// with its path, without Go's "read" prefix.
func TestLoadUnreadable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || err.Error() != p+": cannot read it: is a directory" {
		t.Errorf("Load of a folder: %v", err)
	}
}

// TestOnlyFromCommand reads --only in each way a command line gives it.
func TestOnlyFromCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want variant.Variant
	}{
		{"lab run l.yaml", ""},
		{"lab run l.yaml --only patched", variant.Patched},
		{"lab run l.yaml -only=baseline", variant.Baseline},
		{"lab run --only baseline l.yaml", variant.Baseline},
		{"lab run l.yaml --onlyx patched", ""},
		{"lab run l.yaml --only", ""},
	} {
		r := &Run{Command: strings.Fields(tc.cmd)}
		if got := r.only(); got != tc.want {
			t.Errorf("%q: only %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
