// Package stackprof is lab's sampled profile: where the time of a
// benchmark went under KVM or the wall clock, where no instruction counter
// runs. The guest agent samples kernel stacks with a perf_event BPF program
// (protocol.StackProfile); this package names them by the kernel's
// System.map and sets two kernels' profiles side by side as the kernel
// test robot does (perf-profile.self and .children: the share of all
// samples a function was sampled in, itself or below it).
package stackprof

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"lab/initramfs/protocol"
	"lab/internal/insnprof"
	"lab/internal/results"
)

// Method is what results.Profile.Method says of a sampled profile.
const Method = "sampled"

// Lost names the samples whose stack the guest could not keep.
const Lost = "[lost]"

// Summarize is the sampled profile of each benchmark result of boot b that
// has one (protocol.Result.Stacks), by function: self counts the samples a
// function was the sampled address's, children those it was anywhere on
// the stack (once a stack). A result whose profile failed is left out and
// said in the error list.
func Summarize(b results.Boot, syms *insnprof.Symbols) ([]results.ProfileResult, []string) {
	var out []results.ProfileResult
	var failed []string
	for _, res := range b.Results {
		sp := res.Stacks
		if !res.OK() || sp == nil {
			continue
		}
		if sp.Error != "" {
			failed = append(failed, fmt.Sprintf("%s p=%d: %s", res.Benchmark, res.Producers, sp.Error))
			continue
		}
		out = append(out, summarize(res, sp, syms))
	}
	return out, failed
}

func summarize(res protocol.Result, sp *protocol.StackProfile, syms *insnprof.Symbols) results.ProfileResult {
	pr := results.ProfileResult{Benchmark: res.Benchmark, Tool: res.Tool, Producers: res.Producers,
		Ops: sp.Sample.Hits, Samples: sp.Taken, Event: sp.Event, Hz: sp.Hz}
	self, children := map[string]uint64{}, map[string]uint64{}
	if sp.User > 0 {
		self[insnprof.User], children[insnprof.User] = sp.User, sp.User
	}
	if sp.Lost > 0 {
		self[Lost], children[Lost] = sp.Lost, sp.Lost
	}
	for _, st := range sp.Stacks {
		if len(st.PCs) == 0 {
			self[Lost] += st.N
			children[Lost] += st.N
			continue
		}
		seen := map[string]bool{}
		for i, pc := range st.PCs {
			name := syms.Name(pc)
			if i == 0 {
				self[name] += st.N
			}
			if !seen[name] {
				seen[name] = true
				children[name] += st.N
			}
		}
	}
	for name, n := range children {
		pr.Functions = append(pr.Functions, results.FunctionCount{Name: name, Self: self[name], Children: n})
	}
	slices.SortFunc(pr.Functions, func(a, b results.FunctionCount) int {
		return cmp.Or(cmp.Compare(b.Self, a.Self), cmp.Compare(b.Children, a.Children), cmp.Compare(a.Name, b.Name))
	})
	return pr
}

// Line is one function of a sampled where-block: its share of all samples,
// in percent, on each kernel, itself (self) and with what it called
// (children).
type Line struct {
	Function       string  `json:"function"`
	SelfBefore     float64 `json:"self_before"`
	SelfAfter      float64 `json:"self_after"`
	ChildrenBefore float64 `json:"children_before"`
	ChildrenAfter  float64 `json:"children_after"`
}

// Where is where a row's time went on each of two kernels, sampled.
type Where struct {
	Benchmark string `json:"benchmark"`
	Producers int    `json:"producers"`
	Event     string `json:"event"`
	Hz        int    `json:"hz"`
	// Before and After are the samples each kernel's profile took.
	Before uint64 `json:"samples_before"`
	After  uint64 `json:"samples_after"`
	Lines  []Line `json:"functions"`
	// Quiet is how many functions had samples but no change beyond the
	// sampling's noise.
	Quiet int `json:"quiet"`
}

// MaxLines is how many functions a sampled where-block lists at most.
const MaxLines = 12

// MinPoints is the least change of a share, in percentage points, a
// where-block lists, however many samples there are.
const MinPoints = 0.1

// Diff sets kernel a's sampled profile of a row against b's: the
// functions whose self or children share changed by more than three times
// the sampling's standard error (a share p of n samples varies by
// √(p(1−p)/n)): of the hundred functions a profile holds, one that did not
// move is listed about once in three hundred (0.27 % a share). Largest
// change first.
func Diff(a, b results.ProfileResult) Where {
	w := Where{Benchmark: a.Benchmark, Producers: a.Producers, Event: a.Event, Hz: a.Hz, Before: a.Samples, After: b.Samples}
	if a.Samples == 0 || b.Samples == 0 {
		return w
	}
	lines := map[string]*Line{}
	line := func(name string) *Line {
		if lines[name] == nil {
			lines[name] = &Line{Function: name}
		}
		return lines[name]
	}
	for _, f := range a.Functions {
		l := line(f.Name)
		l.SelfBefore, l.ChildrenBefore = pct(f.Self, a.Samples), pct(f.Children, a.Samples)
	}
	for _, f := range b.Functions {
		l := line(f.Name)
		l.SelfAfter, l.ChildrenAfter = pct(f.Self, b.Samples), pct(f.Children, b.Samples)
	}
	var moved []Line
	for _, l := range lines {
		if beyondNoise(l.SelfBefore, l.SelfAfter, a.Samples, b.Samples) || beyondNoise(l.ChildrenBefore, l.ChildrenAfter, a.Samples, b.Samples) {
			moved = append(moved, *l)
		} else {
			w.Quiet++
		}
	}
	slices.SortFunc(moved, func(x, y Line) int {
		return cmp.Or(cmp.Compare(math.Abs(y.SelfAfter-y.SelfBefore), math.Abs(x.SelfAfter-x.SelfBefore)),
			cmp.Compare(math.Abs(y.ChildrenAfter-y.ChildrenBefore), math.Abs(x.ChildrenAfter-x.ChildrenBefore)),
			cmp.Compare(x.Function, y.Function))
	})
	if len(moved) > MaxLines {
		w.Quiet += len(moved) - MaxLines
		moved = moved[:MaxLines]
	}
	w.Lines = moved
	return w
}

func pct(n, of uint64) float64 { return 100 * float64(n) / float64(of) }

// beyondNoise says whether a share moved from x to y percent of na and nb
// samples by more than three standard errors and MinPoints.
func beyondNoise(x, y float64, na, nb uint64) bool {
	d := math.Abs(y - x)
	if d < MinPoints {
		return false
	}
	p, q := x/100, y/100
	se := 100 * math.Sqrt(p*(1-p)/float64(na)+q*(1-q)/float64(nb))
	return d > 3*se
}

// Text is the where-block in lines of at most 80 columns, indented by
// indent, in the kernel test robot's terms.
func (w Where) Text(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s p=%d: %d → %d samples (%s, %d Hz a CPU)\n", indent, w.Benchmark, w.Producers, w.Before, w.After, w.Event, w.Hz)
	fmt.Fprintf(&b, "%s  %-26s %22s %23s\n", indent, "", "self, % of samples", "children, % of samples")
	fmt.Fprintf(&b, "%s  %-26s %6s %6s %7s  %6s %6s %7s\n", indent, "function", "before", "after", "Δ", "before", "after", "Δ")
	if len(w.Lines) == 0 {
		fmt.Fprintf(&b, "%s  no function's share changed beyond the sampling's noise\n", indent)
	}
	for _, l := range w.Lines {
		fmt.Fprintf(&b, "%s  %-26s %6.2f %6.2f %+7.2f  %6.2f %6.2f %+7.2f\n", indent, clip(l.Function, 26),
			l.SelfBefore, l.SelfAfter, l.SelfAfter-l.SelfBefore, l.ChildrenBefore, l.ChildrenAfter, l.ChildrenAfter-l.ChildrenBefore)
	}
	if w.Quiet > 0 {
		fmt.Fprintf(&b, "%s  %d other functions within the noise (3 standard errors, or %.1f points)\n", indent, w.Quiet, MinPoints)
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
