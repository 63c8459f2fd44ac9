package results

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"lab/initramfs/protocol"
	"lab/internal/variant"
)

// validate refuses a results.json that parses but that no lab run writes:
// figures no boot can have (checkFigures), two boots with one index, a boot
// of a variant the run does not have, a measured result without samples,
// or a variant whose every sample is zero (a guest that ran counts
// something, if only its control loops). Without it such a file is
// reported as figures, with exit 0 and "p = 0.000". It is the one owner of
// these rules: Load calls it on every file it reads.
func validate(path string, r *Run) error {
	if err := checkFigures(path, r); err != nil {
		return err
	}
	if err := checkIndexes(r); err != nil {
		return fmt.Errorf("%s: %w: not a lab run's record (edited?)", path, err)
	}
	if err := checkVariants(r); err != nil {
		return fmt.Errorf("%s: %w: not a lab run's record (edited?)", path, err)
	}
	if err := checkSamples(r); err != nil {
		return fmt.Errorf("%s: %w: not a lab run's record (edited, or not measured?)", path, err)
	}
	return nil
}

// checkFigures refuses what no boot can have: a result without a
// benchmark, a producer count below 1, a rate or an interval that is
// negative or not a number, a rate without hits (or hits without a rate);
// and a run with only boots that neither delivered nor failed.
func checkFigures(path string, r *Run) error {
	empty := 0
	for _, b := range r.Boots {
		if b.OK() && len(b.Results) == 0 {
			empty++
		}
		for _, res := range b.Results {
			samples := append(append(append([]protocol.Sample(nil), res.Warmup...), res.Samples...), res.Retaken...)
			if res.ProbeFree != nil {
				samples = append(samples, *res.ProbeFree)
			}
			if res.Benchmark == "" {
				return fmt.Errorf("%s: %s: a result names no benchmark: not figures a lab run writes", path, bootName(b))
			}
			where := fmt.Sprintf("%s: %s: %s at %d producers", path, bootName(b), res.Benchmark, res.Producers)
			if res.Producers < 1 {
				return fmt.Errorf("%s: no boot runs fewer than 1 producer: not figures a lab run writes", where)
			}
			for _, s := range samples {
				if s.IntervalNS <= 0 || s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) {
					return fmt.Errorf("%s has a sample of %d ns at rate %g: not figures a lab run writes", where, s.IntervalNS, s.Rate)
				}
				if (s.Hits > 0) != (s.Rate > 0) {
					return fmt.Errorf("%s has a sample of %d hits at rate %g: a rate is hits a second, both zero or neither: not figures a lab run writes", where, s.Hits, s.Rate)
				}
			}
		}
	}
	if empty == len(r.Boots) {
		return fmt.Errorf("%s: none of the %d boots of run %s has results or a failure: not a lab run's record (edited, or cut short?)", path, empty, r.RunID)
	}
	return nil
}

// checkIndexes: a run numbers its boots from 1, each once (a merged run
// keeps its shards' numbers, which are the whole run's).
func checkIndexes(r *Run) error {
	seen := map[int]bool{}
	for _, b := range r.Boots {
		if b.Index < 1 {
			return fmt.Errorf("a boot has index %d: boots are numbered from 1", b.Index)
		}
		if seen[b.Index] {
			return fmt.Errorf("boot %d is there twice: each boot has its own index", b.Index)
		}
		seen[b.Index] = true
	}
	return nil
}

// checkVariants refuses a boot of a variant the run does not have.
func checkVariants(r *Run) error {
	seen := map[variant.Variant]bool{}
	for i, s := range r.Series {
		if _, err := variant.Name(string(s.Variant)); err != nil {
			return fmt.Errorf("series[%d] (%s): %w", i, s.Name, err)
		}
		if seen[s.Variant] {
			return fmt.Errorf("series[%d] (%s): variant %s names two series", i, s.Name, s.Variant)
		}
		seen[s.Variant] = true
	}
	have := r.variants()
	for _, b := range r.Boots {
		if b.Variant == "" && r.Bisect != nil {
			continue // a bisect's middle steps are neither end
		}
		if b.Variant == "" {
			return fmt.Errorf("boot %d has no variant: this run boots %s", b.Index, variantList(variant.Kernels(r.SeriesVariants())))
		}
		if !slices.Contains(variant.Kernels(r.SeriesVariants()), b.Variant) {
			return fmt.Errorf("boot %d is of variant %q: this run boots %s only", b.Index, b.Variant, variantList(variant.Kernels(r.SeriesVariants())))
		}
		if !slices.Contains(have, b.Variant) {
			return fmt.Errorf("boot %d is of %s, which this run does not have (%s)", b.Index, b.Variant, r.variantsWhy(b.Variant))
		}
		if r.Bisect == nil && len(r.Kernels) > 0 && !slices.ContainsFunc(r.Kernels, func(k Kernel) bool { return k.Arch == b.Arch && k.Variant == b.Variant }) {
			return fmt.Errorf("boot %d is of the %s %s kernel, which the run did not build (its kernels: %s)", b.Index, b.Arch, b.Variant, r.kernelList())
		}
	}
	return nil
}

// variants are the variants the run boots: the baseline and each series'
// kernel, or the one of lab run --only; a variant without a commit (the
// series' variant_commits) is not one the run made, unless the record has
// no commits at all.
func (r *Run) variants() []variant.Variant {
	only := r.only()
	noCommits := true
	for _, s := range r.Series {
		noCommits = noCommits && s.Variants == variant.Pair[string]{}
	}
	var out []variant.Variant
	for _, v := range variant.Kernels(r.SeriesVariants()) {
		if (only == "" || only == v) && (noCommits || r.Commit(v) != "") {
			out = append(out, v)
		}
	}
	return out
}

// variantsWhy says why the run does not have v, for messages.
func (r *Run) variantsWhy(v variant.Variant) string {
	if only := r.only(); only != "" && only != v {
		return fmt.Sprintf("it booted %s only: --only %s", only, only)
	}
	return fmt.Sprintf("its series has no %s commit in variant_commits", v)
}

// only is the variant of lab run --only in the run's command line, "" when
// it booted both.
func (r *Run) only() variant.Variant {
	for i, a := range r.Command {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "only" {
			continue
		}
		if !hasVal && i+1 < len(r.Command) {
			val = r.Command[i+1]
		}
		if v, err := variant.Parse(val); err == nil {
			return v
		}
	}
	return ""
}

func variantList(vs []variant.Variant) string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v))
	}
	return strings.Join(out, ", ")
}

func (r *Run) kernelList() string {
	var ks []string
	for _, k := range r.Kernels {
		ks = append(ks, fmt.Sprintf("%s %s", k.Arch, k.Variant))
	}
	return strings.Join(ks, ", ")
}

// checkSamples refuses figures no guest writes: a result that ran (no
// error, supported) without a sample, and a variant whose delivered boots
// counted nothing at all. The agent takes its samples (one a second, or
// one of a shorter duration) or says why not, and the controls it runs beside every benchmark count their own
// loops, whatever the kernel does.
func checkSamples(r *Run) error {
	counted := map[variant.Variant]bool{}
	delivered := map[variant.Variant]int{}
	for _, b := range r.Boots {
		if !b.OK() || len(b.Results) == 0 {
			continue
		}
		delivered[b.Variant]++
		for _, res := range b.Results {
			if !res.OK() {
				continue
			}
			if len(res.Samples) == 0 {
				return fmt.Errorf("%s: %s at %d producers ran but has no samples (the agent takes every one it is asked for, or says why not)", bootName(b), res.Benchmark, res.Producers)
			}
			for _, s := range res.Samples {
				if s.Hits > 0 {
					counted[b.Variant] = true
				}
			}
		}
	}
	for _, v := range append(slices.Clone(variant.Kernels(r.SeriesVariants())), "") {
		if n := delivered[v]; n > 0 && !counted[v] {
			return fmt.Errorf("every sample of the %d %s boots that delivered is zero: a guest that ran counts something", n, variantName(v))
		}
	}
	return nil
}

// bootName names a boot in messages: "boot 3 (x86_64, baseline)", leaving
// out what the file does not say.
func bootName(b Boot) string {
	var about []string
	for _, s := range []string{b.Arch, string(b.Variant)} {
		if s != "" {
			about = append(about, s)
		}
	}
	if len(about) == 0 {
		return fmt.Sprintf("boot %d", b.Index)
	}
	return fmt.Sprintf("boot %d (%s)", b.Index, strings.Join(about, ", "))
}

// variantName names a boot's variant in messages; a bisect's middle step
// has none.
func variantName(v variant.Variant) string {
	if v == "" {
		return "bisect step"
	}
	return string(v)
}

// jsonValue names a JSON value as encoding/json describes it ("array",
// "number -5"), with its article: "an array", "a number -5".
func jsonValue(desc string) string {
	switch desc {
	case "":
		return "a value"
	case "bool":
		return "a boolean"
	}
	if strings.ContainsRune("aeiou", rune(desc[0])) {
		return "an " + desc
	}
	return "a " + desc
}
