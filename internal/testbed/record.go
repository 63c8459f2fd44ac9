package testbed

import (
	"lab/internal/kbuild"
	"lab/internal/results"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/vm"
)

// The run's working types (the lab file's, the build's, QEMU's) become the
// record's (package results) here, and only here: results.json keeps its
// shape when a working type changes, and what reads it links none of them.

// RecordMatrix is the matrix as results.json records it.
func RecordMatrix(m spec.Matrix) results.Matrix {
	return results.Matrix{
		Arch: m.Arch, CPUs: m.CPUs, Memory: m.Memory, Benchmarks: m.Benchmarks, Producers: m.Producers,
		ClipProducers: m.ClipProducers, Boots: m.Boots, Seeds: m.Seeds, Duration: m.Duration.Duration, Warmup: m.Warmup.Duration,
		Measure: m.Measure, Affinity: m.Affinity, MaxActive: m.MaxActive, Controls: m.Controls,
		NUMA: m.NUMA, NUMALayout: m.NUMALayout, Sockets: m.Sockets, Clusters: m.Clusters, Cores: m.Cores,
		Threads: m.Threads, Pin: m.Pin,
	}
}

// RecordClaims are the lab's claims as results.json records them.
func RecordClaims(cs []spec.Claim) []results.Claim {
	var out []results.Claim
	for _, c := range cs {
		out = append(out, results.Claim{Benchmark: c.Benchmark, Producers: c.Producers, Direction: c.Direction,
			Min: c.Min, Scaling: c.Scaling, Note: c.Note})
	}
	return out
}

// RecordSeries is the series as results.json records it: its patches,
// the mode the variants were made in (res: none yet when zero) and why,
// what the input was and what the list added (the cover letter, the
// base-commit, each patch's author and trailers). What the lab asked
// (ModeAsked) and did with the base-commit (Base) are the caller's.
func RecordSeries(s *series.Series, res source.Resolution) results.Series {
	out := results.Series{Name: s.Name, Mode: res.Mode, Hash: s.Hash(), Variants: res.Commits,
		ModeReason: res.Why, Kind: s.Kind, Input: s.Input, InputSHA256: s.InputSHA256,
		RFC: s.RFC, BaseCommit: s.BaseCommit, Notes: s.Notes}
	if s.Kind != "" {
		out.Version = s.Version // Load, which reads no list, leaves it 0
	}
	if c := s.Cover; c != nil {
		out.Cover = &results.Cover{Subject: c.Subject, Version: c.Version, Total: c.Total, Author: c.Author,
			BaseCommit: c.BaseCommit, Origin: c.Origin, MailSHA256: c.MailSHA256}
	}
	for _, p := range s.Patches {
		rp := results.Patch{Name: p.Name, Subject: p.Subject, SHA256: p.SHA256, Author: p.Author, Number: p.Number,
			Total: p.Total, MailSHA256: p.MailSHA256, Origin: p.Origin}
		for _, t := range p.Trailers {
			rp.Trailers = append(rp.Trailers, results.Trailer{Key: t.Key, Value: t.Value})
		}
		out.Patches = append(out.Patches, rp)
	}
	return out
}

// RecordBuild is a kernel's build as results.json records it.
func RecordBuild(i kbuild.Info) results.Build {
	return results.Build{
		Key: i.Key, Image: i.Image, Config: i.Config, ConfigSHA256: i.ConfigSHA256, Release: i.Release,
		ImageSHA256: i.ImageSHA256, BTF: i.BTF, Compiled: i.Compiled, Duration: i.Duration, BuiltAt: i.BuiltAt,
		Configure: i.Configure, Make: i.Make, Seeded: i.Seeded, SameAs: i.SameAs,
		Inputs: results.BuildInputs{Tree: i.Inputs.Tree, Arch: i.Inputs.Arch, Fragments: i.Inputs.Fragments,
			Compiler: i.Inputs.Compiler, SourceID: i.Inputs.SourceID, Commit: i.Inputs.Commit},
	}
}

func recordAccel(a vm.Accel) results.Accel {
	return results.Accel{Name: a.Name, Reason: a.Reason, Nested: a.Nested}
}

// recordOutcome is what QEMU did as results.json records it; nil when the
// boot never got to start QEMU.
func recordOutcome(o *vm.Outcome) *results.Outcome {
	if o == nil {
		return nil
	}
	r := &results.Outcome{
		QEMU: o.QEMU, Args: o.Args, QEMUVersion: o.QEMUVersion, Pinned: o.Pinned,
		Wall: o.Wall, ToAgent: o.ToAgent, ExitCode: o.ExitCode, THPOff: o.THPOff,
		Deterministic: o.Deterministic,
	}
	for _, v := range o.VCPUs {
		r.VCPUs = append(r.VCPUs, results.VCPU{Index: v.Index, ThreadID: v.ThreadID, Target: v.Target,
			Props: results.VCPUProps{Socket: v.Props.Socket, Cluster: v.Props.Cluster, Core: v.Props.Core, Thread: v.Props.Thread, Node: v.Props.Node}})
	}
	for _, m := range o.Memdevs {
		r.Memdevs = append(r.Memdevs, results.Memdev{ID: m.ID, SizeMiB: m.SizeMiB})
	}
	for _, f := range o.Problems {
		r.Problems = append(r.Problems, results.Finding{Line: f.Line, Kind: f.Kind, Text: f.Text})
	}
	for _, s := range o.CPUSamples {
		r.CPUSamples = append(r.CPUSamples, results.CPUSample{Records: s.Records, At: s.At, CPU: s.CPU})
	}
	return r
}
