package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"lab/internal/arch"
	"lab/internal/history"
	"lab/internal/results"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/topology"
	"lab/internal/track"
	"lab/internal/vm"
)

// trackedHistory is a history of lab "stream" tracked every 2nd commit
// of c1..c24 on hostCPUs host CPUs: uprobe-nop slows at commits a and b.
func trackedHistory(t *testing.T, where string, hostCPUs, a, b int) {
	t.Helper()
	r := &history.Run{Lab: "stream", RunID: fmt.Sprintf("track-%d", hostCPUs), Kind: history.KindTrack, LabVersion: "v",
		Started: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Source: history.Source{Desc: "git", ID: "git-x", Commit: "c0"}}
	for seq := 2; seq <= 24; seq += 2 {
		v := 1.094e6
		if seq >= a {
			v *= 0.95
		}
		if seq >= b {
			v *= 0.97
		}
		r.Boots = append(r.Boots, history.Boot{
			Index: len(r.Boots) + 1, Commit: fmt.Sprintf("c%d", seq), CommitSeq: seq, KernelKey: fmt.Sprintf("k%d", seq), ImageSHA256: fmt.Sprintf("i%d", seq),
			Arch: "x86_64", CPUs: 1, Topology: "sockets=1,clusters=1,cores=1,threads=1", Clock: history.ClockICount, Accel: "tcg",
			Host: history.Host{CPUModel: "AMD EPYC", CPUs: hostCPUs, QEMUVersion: "7.2.15"},
			Figures: []history.Figure{
				{Benchmark: "uprobe-nop", Producers: 1, Metric: history.MetricRate, Value: v * (1 + 1e-5*float64(seq%3))},
				{Benchmark: "syscall-count", Producers: 1, Metric: history.MetricRate, Value: 3.86e6 * (1 + 1e-5*float64(seq%2))},
			},
		})
	}
	s, err := history.Open(context.Background(), where)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Add(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// lab track --bisect --print: one lab bisect command per change point of
// this shape on this host, with the flags the track was given; another
// host's series is not this track's.
func TestTrackBisectPrint(t *testing.T) {
	where := filepath.Join(t.TempDir(), "history.db")
	trackedHistory(t, where, 2, 7, 13)   // c6..c8, c12..c14
	trackedHistory(t, where, 64, 11, 19) // another host class: not this track's
	x86, err := arch.Lookup("x86_64")
	if err != nil {
		t.Fatal(err)
	}
	res := &track.Result{Run: &results.Run{Host: results.Host{CPUModel: "AMD EPYC", CPUs: 2}},
		Plans: []testbed.ShapePlan{{Arch: x86, Shape: topology.Shape{CPUs: 1}, Clock: results.ClockICount, Accel: vm.Accel{Name: "tcg"}}}}
	var out bytes.Buffer
	b := trackBisect{lab: &spec.Lab{Name: "stream"}, labFile: "labs/stream.yaml", where: where, inv: invocation{out: &out}, extra: []string{"--duration=1s"}}
	if err := b.culprits(context.Background(), res, -1, true); err != nil {
		t.Fatal(err)
	}
	want := "lab bisect labs/stream.yaml --good c6 --bad c8 --benchmark uprobe-nop --producers 1 --arch=x86_64 --cpus=1 --duration=1s\n" +
		"lab bisect labs/stream.yaml --good c12 --bad c14 --benchmark uprobe-nop --producers 1 --arch=x86_64 --cpus=1 --duration=1s\n"
	if got := out.String(); got != want {
		t.Errorf("printed\n%s\nwant\n%s", got, want)
	}
}
