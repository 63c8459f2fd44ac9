package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"lab/initramfs/protocol"
	"lab/internal/cpulist"
	"lab/internal/insnprof"
	"lab/internal/results"
	"lab/internal/topology"
)

// FromRun makes the history's record of a lab run (results.json), of the
// kind the run says (a run, a bisect, a track, a merge of shards). A bisect
// over a git range gives its steps' places along the branch; a track's
// caller sets each boot's CommitSeq.
func FromRun(r *results.Run) (*Run, error) {
	kind := r.Kind
	if kind == "" || kind == results.KindBuild {
		kind = KindRun
	}
	h := &Run{
		Lab: r.Lab, RunID: r.RunID, Kind: kind, LabVersion: r.LabVersion, Command: r.Command, Started: r.Started,
		Source: Source{Desc: r.Source.Desc, ID: r.Source.ID, TarballSHA256: tarballSHA256(r.Source),
			Commit: r.Source.Commit, KernelVersion: r.Source.Version},
	}
	for _, s := range r.Series {
		h.Series = append(h.Series, Series{Variant: string(s.Variant), Name: s.Name, Mode: s.Mode, SHA256: s.Hash})
	}
	for _, b := range r.Boots {
		commit, kernel, seq := r.Commit(b.Variant), kernelOf(r, b), 0
		if step := bisectStep(r, b.Index); step != nil {
			commit, kernel, seq = step.Commit, step.Kernel, step.Seq
		}
		if kernel == nil {
			return nil, fmt.Errorf("run %s of lab %s, boot %d: no kernel for %s %s", r.RunID, r.Lab, b.Index, b.Arch, b.Variant)
		}
		host := r.Host
		if b.Host != nil {
			host = *b.Host // a merged run's boot ran on its shard's host
		}
		hb := Boot{
			Index: b.Index, Digest: digest(b), Variant: string(b.Variant), Commit: commit, CommitSeq: seq,
			KernelKey: kernel.Info.Key, ImageSHA256: kernel.Info.ImageSHA256,
			Arch: b.Arch, CPUs: b.CPUs, Topology: topologyOf(b), Clock: b.Clock, Accel: b.Accel.Name, Method: b.Method(),
			Host: Host{Name: host.Name, CPUModel: host.CPUModel, CPUs: host.CPUs, Kernel: host.Kernel},
		}
		if b.Outcome != nil {
			hb.Host.QEMUVersion = b.Outcome.QEMUVersion
		}
		if b.Failure != nil {
			hb.Failure = b.Failure.Kind
		}
		for _, res := range b.Results {
			if rate := protocol.Rate(res.Samples); res.OK() && rate > 0 {
				hb.Figures = append(hb.Figures, Figure{Benchmark: res.Benchmark, Tool: res.Tool, Producers: res.Producers, Metric: MetricRate, Value: rate})
			}
		}
		for _, ratio := range b.Ratios() {
			hb.Figures = append(hb.Figures, Figure{Benchmark: ratio.Benchmark, Tool: ratio.Tool, Producers: ratio.Producers, Metric: MetricScaling, Value: ratio.Value})
		}
		h.Boots = append(h.Boots, hb)
	}
	if c, ok := bisectCulprit(r, h); ok {
		h.Culprits = append(h.Culprits, c)
	}
	return h, nil
}

// bisectCulprit is what a bisect over a git range found, for the series
// of the figure it followed: the ends are the last commit before a change
// point and the first after it, as lab track hands them over, so the
// history's report shows the culprit at its change point also when the
// bisect is imported. A bisect of a series' patches gives none: its
// steps are not commits of a branch.
func bisectCulprit(r *results.Run, h *Run) (Culprit, bool) {
	bi := r.Bisect
	if bi == nil || h.Kind != KindBisect || len(bi.Steps) < 2 || bi.Outcome == "" || bi.Figure.Benchmark == "" {
		return Culprit{}, false
	}
	good, bad := bi.Steps[0], bi.Steps[len(bi.Steps)-1]
	if good.Seq == 0 || bad.Seq == 0 || good.Commit == "" || bad.Commit == "" {
		return Culprit{}, false
	}
	metric := MetricRate
	if bi.Figure.Scaling {
		metric = MetricScaling
	}
	for _, b := range h.Boots {
		if b.Failure != "" {
			continue
		}
		for _, f := range b.Figures {
			if f.Benchmark != bi.Figure.Benchmark || f.Producers != bi.Figure.Producers || f.Metric != metric {
				continue
			}
			k := LineKey{Lab: h.Lab, Variant: LineVariant(h.Kind, b.Variant), Benchmark: f.Benchmark, Tool: f.Tool, Producers: f.Producers, Metric: f.Metric,
				Arch: b.Arch, CPUs: b.CPUs, Topology: b.Topology, Clock: b.Clock, Accel: b.Accel, HostClass: b.Host.Class(), Method: b.Method}
			return Culprit{Lab: h.Lab, Line: k.String(), Good: good.Commit, Bad: bad.Commit, Culprit: bi.CulpritCommit(),
				Outcome: bi.Outcome, BisectRun: r.RunID, Where: strings.TrimPrefix(insnprof.CulpritText(r), "\n"), Added: r.Started}, true
		}
	}
	return Culprit{}, false
}

func kernelOf(r *results.Run, b results.Boot) *results.Kernel {
	for i, k := range r.Kernels {
		if k.Arch == b.Arch && k.Variant == b.Variant {
			return &r.Kernels[i]
		}
	}
	return nil
}

// bisectStep is the bisect step a boot measured, nil outside a bisect.
func bisectStep(r *results.Run, boot int) *results.BisectStep {
	if r.Bisect == nil {
		return nil
	}
	for i, s := range r.Bisect.Steps {
		if slices.Contains(s.Boots, boot) {
			return &r.Bisect.Steps[i]
		}
	}
	return nil
}

var tarballSum = regexp.MustCompile(`\(sha256 ([0-9a-f]{64})\)`)

// tarballSHA256 is a tarball source's sha256, which its description holds
// whole (its id only a prefix).
func tarballSHA256(s results.Source) string {
	if !strings.HasPrefix(s.ID, "tarball-") {
		return ""
	}
	if m := tarballSum.FindStringSubmatch(s.Desc); m != nil && strings.HasPrefix(m[1], strings.TrimPrefix(s.ID, "tarball-")) {
		return m[1]
	}
	return ""
}

// topologyOf writes a guest's topology; a boot recorded before shapes were
// is one socket of single-thread cores, as lab booted it then.
func topologyOf(b results.Boot) string {
	s := b.Shape
	if s == nil {
		s = &topology.Shape{CPUs: b.CPUs, Sockets: 1, Clusters: 1, Cores: b.CPUs, Threads: 1}
	}
	t := fmt.Sprintf("sockets=%d,clusters=%d,cores=%d,threads=%d", s.Sockets, s.Clusters, s.Cores, s.Threads)
	if len(s.Nodes) > 1 {
		var nodes []string
		for _, n := range s.Nodes {
			nodes = append(nodes, cpulist.Format(n.CPUs))
		}
		t += ",nodes=" + strings.Join(nodes, "/")
	}
	return t
}

// digest identifies a boot by its raw samples, which no other boot
// repeats, so that it is kept once when both a shard and the merged run
// are added. A boot without samples has none.
func digest(b results.Boot) string {
	n := 0
	for _, r := range b.Results {
		n += len(r.Samples)
	}
	if n == 0 {
		return ""
	}
	data, err := json.Marshal(b.Results)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
