package report

import (
	"fmt"
	"strings"

	"lab/internal/gitcmd"
	"lab/internal/results"
	"lab/internal/stats"
	"lab/internal/variant"
	"lab/internal/verdict"
)

// Document is everything a report shows, built from results.json alone.
type Document struct {
	Title     string                `json:"title"`
	Lab       string                `json:"lab"`
	Compare   bool                  `json:"compare,omitempty"` // baseline and patched come from two runs
	Runs      []RunInfo             `json:"runs"`
	Tables    []verdict.Table       `json:"tables"`
	Claims    []verdict.ClaimResult `json:"claims,omitempty"`
	Caveats   []string              `json:"caveats,omitempty"`
	Generator string                `json:"generator"` // lab version that wrote the report
	// Header are lines every report shows on top: for a series from a
	// mailing list (an mbox, a mail, a diff) or run in mode auto, what it
	// is, the mode lab chose and why, and what it did with the base-commit.
	Header []string `json:"header,omitempty"`
	// Kernels are the report's columns: the baseline and each series, or
	// each run set side by side. Comparisons are what it judges, each with
	// its tables: one, patched vs baseline, for a run of one series. Tables
	// holds the tables of those against the first kernel, which the claims
	// and the CI gates judge.
	Kernels     []variant.Variant `json:"kernels"`
	Comparisons []Judged          `json:"comparisons"`
}

// RunInfo is one run's provenance and reproducer.
type RunInfo struct {
	Role       string         `json:"role"` // "baseline and patched", or which side of a comparison
	Dir        string         `json:"dir"`
	RunID      string         `json:"run_id"`
	LabVersion string         `json:"lab_version"`
	Complete   bool           `json:"complete"`
	Reproducer string         `json:"reproducer"`
	Source     results.Source `json:"source"`
	Series     string         `json:"series"`
	SeriesMode string         `json:"series_mode,omitempty"` // the mode and why: "revert: every patch applies in reverse ..."
	SeriesBase string         `json:"series_base,omitempty"` // what lab did with the series' base-commit
	Patches    []string       `json:"patches"`
	Kernels    []string       `json:"kernels"`
	Host       string         `json:"host"`
	QEMU       []string       `json:"qemu"`   // version and accelerator of each shape
	Args       []string       `json:"args"`   // one QEMU command line per shape
	Failed     []string       `json:"failed"` // boots that did not deliver
}

// Build makes the report of one run: each series against the baseline,
// each against the one before; claims per series.
func Build(r *results.Run, dir, generator string) *Document {
	d := &Document{Title: r.Lab, Lab: r.Lab, Generator: generator}
	series := r.SeriesVariants()
	if len(series) == 0 {
		series = []variant.Variant{variant.Patched} // a record that names no series
	}
	kernels := variant.Kernels(series)
	var names []string
	for _, k := range kernels {
		names = append(names, string(k))
	}
	role := strings.Join(names, " and ")
	if n := len(names); n > 2 {
		role = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	d.Runs = []RunInfo{runInfo(r, dir, role)}
	buildColumns(d, kernels, r.Boots, variant.Comparisons(series), func(b []results.Boot) []verdict.Table {
		cr := *r
		cr.Boots = b
		return verdict.Tables(&cr)
	})
	for i := range d.Comparisons {
		d.Comparisons[i].Where, d.Comparisons[i].Profiled = wheres(r, d.Comparisons[i])
	}
	for _, c := range d.Comparisons {
		if c.Against != variant.Baseline {
			continue
		}
		for _, cl := range verdict.CheckClaims(r.Claims, c.Tables) {
			if d.named() {
				cl.Series = c.Patched
			}
			d.Claims = append(d.Claims, cl)
		}
	}
	d.Caveats = append(append(append([]string(nil), r.Caveats...), caveats(d.Tables)...), retried(r.Boots)...)
	d.Header = runHeader(r)
	if len(d.Tables) == 0 {
		// A record of other boots (a track's steps) or of none.
		d.Header = append(d.Header, fmt.Sprintf("no boots of %s: nothing to compare", role))
	}
	return d
}

// runHeader is the Header of a run: each series named by its kernel when
// there are several, else the one series' lines of seriesHeader.
func runHeader(r *results.Run) []string {
	if len(r.Series) < 2 {
		return seriesHeader(r.First())
	}
	var out []string
	for _, s := range r.Series {
		out = append(out, fmt.Sprintf("%s: %s", s.Variant, SeriesTitle(s)))
	}
	if r.Series[0].ModeReason != "" {
		out = append(out, "baseline: "+r.Series[0].ModeReason)
	}
	return out
}

// seriesHeader is the Header of a run of series s: none for a series
// folder run in the lab's own mode (the lab names it).
func seriesHeader(s results.Series) []string {
	listed := s.Kind != "" && s.Kind != "folder"
	auto := s.ModeAsked != "" && s.ModeAsked != s.Mode
	if !listed && !auto {
		return nil
	}
	out := []string{"series: " + SeriesTitle(s)}
	if auto {
		out = append(out, fmt.Sprintf("mode %s: %s", s.ModeAsked, s.ModeReason))
	}
	if s.Base != "" {
		out = append(out, "base: "+s.Base)
	}
	return out
}

// BuildCompare sets variant v of run a (as "baseline") against the same
// variant of run b (as "patched"): two series, two hosts, KVM against TCG.
// Boots are matched by arch and shape; accelerator and clock may differ,
// each side keeps its own, and the table header names both.
func BuildCompare(a, b *results.Run, dirA, dirB string, v variant.Variant, generator string) *Document {
	var boots []results.Boot
	for _, side := range []struct {
		r    *results.Run
		role variant.Variant
	}{{a, variant.Baseline}, {b, variant.Patched}} {
		for _, bt := range side.r.Boots {
			if bt.Variant != v {
				continue
			}
			bt.Variant = side.role
			boots = append(boots, bt)
		}
	}
	lab := a.Lab + " vs " + b.Lab
	title := fmt.Sprintf("%s (%s) against %s (%s), %s kernels", a.Lab, a.RunID, b.Lab, b.RunID, v)
	if a.Lab == b.Lab {
		lab = a.Lab
	}
	d := &Document{Title: title, Lab: lab, Compare: true, Generator: generator}
	d.Runs = []RunInfo{runInfo(a, dirA, "baseline column: "+string(v)+" of this run"), runInfo(b, dirB, "patched column: "+string(v)+" of this run")}
	buildColumns(d, variant.Both, boots, []variant.Comparison{{Patched: variant.Patched, Against: variant.Baseline}}, verdict.Across)
	d.Caveats = caveats(d.Tables)
	if diff := a.Source.Differs(b.Source); diff != "" {
		d.Caveats = append([]string{diff}, d.Caveats...)
	}
	if a.Lab != b.Lab {
		d.Caveats = append([]string{fmt.Sprintf("two different labs (%s and %s): their kernels, series and benchmarks may differ", a.Lab, b.Lab)}, d.Caveats...)
	}
	return d
}

func runInfo(r *results.Run, dir, role string) RunInfo {
	first := r.First()
	ri := RunInfo{Role: role, Dir: dir, RunID: r.RunID, LabVersion: r.LabVersion, Complete: r.Complete,
		Source: r.Source, Series: seriesProvenance(first), SeriesBase: first.Base,
		Host: fmt.Sprintf("%s, %d CPUs, Linux %s", r.Host.CPUModel, r.Host.CPUs, r.Host.Kernel)}
	if first.ModeAsked != "" && first.ModeAsked != first.Mode {
		ri.SeriesMode = fmt.Sprintf("mode %s: %s", first.ModeAsked, first.ModeReason)
	}
	ri.Reproducer = Reproducer(r)
	// Several series: each one's line and patches name its kernel.
	var titles []string
	for _, s := range r.Series {
		label := ""
		if len(r.Series) > 1 {
			label = string(s.Variant) + " "
			titles = append(titles, fmt.Sprintf("%s: %s", s.Variant, seriesProvenance(s)))
		}
		for _, p := range s.Patches {
			ri.Patches = append(ri.Patches, label+patchLine(p))
		}
	}
	if len(titles) > 0 {
		ri.Series = strings.Join(titles, "; ")
	}
	for _, k := range r.Kernels {
		ri.Kernels = append(ri.Kernels, fmt.Sprintf("%s/%s: %s, key %s, .config sha256 %s", k.Arch, k.Variant, k.Info.Release, gitcmd.Short(k.Info.Key), gitcmd.Short(k.Info.ConfigSHA256)))
	}
	seen := map[string]bool{}
	for _, b := range r.Boots {
		if b.Outcome == nil {
			continue
		}
		topo := verdict.Topology(b)
		k := fmt.Sprintf("%s %s", b.Arch, topo)
		if seen[k] {
			continue
		}
		seen[k] = true
		line := fmt.Sprintf("%s, %s: QEMU %s, %s (%s), %s clock", b.Arch, topo, b.Outcome.QEMUVersion, strings.ToUpper(b.Accel.Name), b.Accel.Reason, b.Clock)
		if b.Outcome.THPOff {
			line += ", guest RAM without transparent huge pages"
		}
		if len(b.Outcome.Deterministic) > 0 {
			var opts []string
			for _, d := range b.Outcome.Deterministic {
				o, _, _ := strings.Cut(d, ": ")
				opts = append(opts, o)
			}
			line += ", held deterministic (" + strings.Join(opts, "; ") + ")"
		}
		ri.QEMU = append(ri.QEMU, line)
		ri.Args = append(ri.Args, b.Outcome.QEMU+" "+shellJoin(b.Outcome.Args))
	}
	for _, b := range r.Boots {
		if !b.OK() {
			first, _, _ := strings.Cut(b.Failure.Message, "\n")
			ri.Failed = append(ri.Failed, fmt.Sprintf("boot %d (%s %s): %s: %s", b.Index, b.Arch, b.Variant, b.Failure.Kind, first))
		}
	}
	return ri
}

// patchLine is a patch's line of the provenance: its file, subject, hash,
// author and trailers.
func patchLine(p results.Patch) string {
	line := fmt.Sprintf("%s: %s (sha256 %s)", p.Name, p.Subject, gitcmd.Short(p.SHA256))
	if p.Author != "" {
		line += ", by " + p.Author
	}
	for _, t := range p.Trailers {
		line += "; " + t.Key + ": " + t.Value
	}
	return line
}

// SeriesTitle names a series as the list did, with what lab read it from:
// "[PATCH v2 0/2] uprobes: two common case speed ups (v2, 2 patches, b4
// mbox, base-commit 1b8f85defbc8)"; a series folder read by name (and any
// record older than the series' kind) is its name.
func SeriesTitle(s results.Series) string {
	title, parts := seriesTitle(s)
	if len(parts) == 0 {
		return title
	}
	return fmt.Sprintf("%s (%s)", title, strings.Join(parts, ", "))
}

// seriesTitle is the title and what SeriesTitle puts in brackets after it.
func seriesTitle(s results.Series) (string, []string) {
	if s.Kind == "" {
		return s.Name, nil
	}
	tag := func(n, m int) string {
		t := "PATCH"
		if s.RFC {
			t = "RFC " + t
		}
		if s.Version > 1 {
			t += fmt.Sprintf(" v%d", s.Version)
		}
		if m > 0 {
			t += fmt.Sprintf(" %d/%d", n, m)
		}
		return "[" + t + "]"
	}
	title := s.Name
	switch {
	case s.Cover != nil:
		title = tag(0, s.Cover.Total) + " " + s.Cover.Subject
	case len(s.Patches) > 0 && s.Kind != "folder":
		title = tag(s.Patches[0].Number, s.Patches[0].Total) + " " + s.Patches[0].Subject
	}
	var parts []string
	if s.Version > 1 {
		parts = append(parts, fmt.Sprintf("v%d", s.Version))
	}
	if n := len(s.Patches); n == 1 {
		parts = append(parts, "1 patch")
	} else {
		parts = append(parts, fmt.Sprintf("%d patches", n))
	}
	kind := map[string]string{"folder": "series folder", "mbox": "mbox", "mail": "one mail", "diff": "bare diff"}[s.Kind]
	if s.Kind == "mbox" && s.Cover != nil && strings.HasSuffix(s.Cover.Origin, ".cover") {
		kind = "b4 mbox" // b4 am writes the cover letter beside the mbox
	}
	if s.Input == "-" {
		kind += " from standard input"
	}
	if kind != "" {
		parts = append(parts, kind)
	}
	if s.BaseCommit != "" {
		parts = append(parts, "base-commit "+gitcmd.Short(s.BaseCommit))
	}
	return title, parts
}

// seriesProvenance is the series' line in a report's provenance: its
// title, the mode its variants were made in and its hash.
func seriesProvenance(s results.Series) string {
	title, parts := seriesTitle(s)
	parts = append(parts, fmt.Sprintf("%s, sha256 %s", s.Mode, gitcmd.Short(s.Hash)))
	if s.Kind == "" {
		return fmt.Sprintf("%s (%s)", title, parts[len(parts)-1])
	}
	return fmt.Sprintf("%s (%s; %s)", title, strings.Join(parts[:len(parts)-1], ", "), parts[len(parts)-1])
}

// Reproducer is the command that makes the same run again: lab's version
// checked out, then the recorded command line, or the command that
// repeats a run whose series the command line gave (results.Run.Repeat).
func Reproducer(r *results.Run) string {
	cmd := shellJoin(r.Command)
	if len(r.Repeat) > 0 {
		cmd = shellJoin(r.Repeat)
	}
	if strings.HasPrefix(cmd, "lab ") {
		cmd = "./" + cmd
	}
	v := strings.TrimSuffix(r.LabVersion, "-dirty")
	if v == "" || v == "unknown" {
		return cmd
	}
	return fmt.Sprintf("git checkout %s && go build -o lab ./cmd/lab && %s", v, cmd)
}

// retried says which boots were booted again because the host starved
// their guest's boot-time calibration: the figures are the last try's, and
// a loaded host is worth knowing of.
func retried(boots []results.Boot) []string {
	var out []string
	for _, b := range boots {
		if n := len(b.Retried); n > 0 {
			out = append(out, fmt.Sprintf("boot %d was booted %d more time(s): the host starved its guest's boot-time timer calibration (a loaded host); the discarded tries' consoles are beside %s", b.Index, n, b.Console))
		}
	}
	return out
}

func caveats(tables []verdict.Table) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, t := range tables {
		switch {
		case t.Shape.ICount():
			add("TCG icount: rates are per 10^9 guest instructions, i.e. path length; caches, locks and contention cost nothing, so the sizes are not hardware sizes")
		case t.Shape.TCG():
			add("TCG (emulated CPU): absolute rates are not hardware rates and drift between boots; compare within a run, prefer the scaling ratios")
		}
		if t.Shape.Caveats != "" {
			for _, c := range strings.Split(t.Shape.Caveats, "; ") {
				add(c)
			}
		}
		minN := stats.MinN()
		if !t.Shape.ICount() && (t.Boots.Baseline < minN || t.Boots.Patched < minN) {
			add(fmt.Sprintf("%s: %d+%d boots: too few for any change to reach p < %.2f (%d per variant needed)", t.Name(), t.Boots.Baseline, t.Boots.Patched, stats.Alpha, minN))
		}
		for _, dr := range t.Drift {
			add(t.Name() + ": " + dr)
		}
		// A benchmark's first second carries what happens once per
		// benchmark (the new probe's first hits, page faults): under icount
		// it was 0.001-0.045 % below the later seconds (kretprobe the most),
		// the same in every boot of an image, but a kernel that changes
		// those one-off costs moves it.
		if t.NoWarmup > 0 {
			add(fmt.Sprintf("%s: %d result(s) had no warm-up: their first second carries one-off costs (a new probe's first hits, page faults), 0.001-0.05 %% under icount; rerun with --warmup 1s for figures of the steady loop", t.Name(), t.NoWarmup))
		}
		if n := len(t.Starved); n > 0 {
			shown := t.Starved[:min(n, 3)]
			more := ""
			if n > 3 {
				more = fmt.Sprintf(" and %d more", n-3)
			}
			add(fmt.Sprintf("%s: in %d result(s) a producer's vCPU got less than %.2f of a host CPU (%s%s; share per producer vCPU): the producers took turns instead of running at once, so their scaling and contention figures understate; the host was busy — rerun with nothing else on it", t.Name(), n, verdict.MinVCPUShare, strings.Join(shown, "; "), more))
		}
	}
	return out
}

// shellJoin quotes args for a POSIX shell.
func shellJoin(args []string) string {
	var out []string
	for _, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@+%", r))
		}) < 0 {
			out = append(out, a)
			continue
		}
		out = append(out, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(out, " ")
}
