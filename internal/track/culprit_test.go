package track

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/internal/history"
	"lab/internal/lines"
	"lab/internal/results"
)

// trackedRun is a track of commits c<seq> (every every-th of 1..n), one
// icount boot each: uprobe-nop at level(seq), syscall-count flat.
func trackedRun(n, every int, level func(seq int) float64) *history.Run {
	r := &history.Run{Lab: "stream", RunID: fmt.Sprintf("track-every%d", every), Kind: history.KindTrack, LabVersion: "v",
		Started: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Source: history.Source{Desc: "git", ID: "git-x", Commit: "c0"}}
	for seq := 1; seq <= n; seq++ {
		if seq%every != 0 && seq != n {
			continue
		}
		r.Boots = append(r.Boots, history.Boot{
			Index: len(r.Boots) + 1, Commit: fmt.Sprintf("c%d", seq), CommitSeq: seq, KernelKey: fmt.Sprintf("k%d", seq), ImageSHA256: fmt.Sprintf("i%d", seq),
			Arch: "x86_64", CPUs: 1, Topology: "sockets=1,clusters=1,cores=1,threads=1", Clock: history.ClockICount, Accel: "tcg",
			Host: history.Host{CPUModel: "AMD EPYC", CPUs: 2, QEMUVersion: "7.2.15"},
			Figures: []history.Figure{
				{Benchmark: "uprobe-nop", Producers: 1, Metric: history.MetricRate, Value: level(seq) * (1 + 1e-5*float64(seq%3))},
				{Benchmark: "syscall-count", Producers: 1, Metric: history.MetricRate, Value: 3.86e6 * (1 + 1e-5*float64(seq%2))},
			},
		})
	}
	return r
}

// levels: uprobe-nop slows 5 % at commit a, 3 % more at b, and commit
// undo undoes the first: three planted change points.
func levels(a, b, undo int) func(seq int) float64 {
	return func(seq int) float64 {
		v := 1.094e6
		if seq >= a && seq < undo {
			v *= 0.95
		}
		if seq >= b {
			v *= 0.97
		}
		return v
	}
}

func TestSuspectsAndCulprits(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		n        int
		every    int
		a, b, u  int      // the planted commits (each with three points a side)
		want     []string // good..bad of each suspect
		bisects  []string // the bisects asked for
		culprits []string
	}{
		{"every commit: each change point is its own culprit", 16, 1, 5, 9, 13, []string{"c4..c5", "c8..c9", "c12..c13"}, nil, []string{"c13", "c5", "c9"}},
		{"every 2nd commit: each change point is bisected", 24, 2, 7, 13, 19, []string{"c6..c8", "c12..c14", "c18..c20"},
			[]string{"c6..c8 uprobe-nop p=1", "c12..c14 uprobe-nop p=1", "c18..c20 uprobe-nop p=1"}, []string{"c13", "c19", "c7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			level := levels(tc.a, tc.b, tc.u)
			store, err := history.Open(ctx, filepath.Join(t.TempDir(), "history.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if _, err := store.Add(ctx, trackedRun(tc.n, tc.every, level)); err != nil {
				t.Fatal(err)
			}
			h, err := lines.Load(ctx, store, lines.Options{Lab: "stream", MinPct: -1})
			if err != nil {
				t.Fatal(err)
			}
			sus := Suspects(h, func(k history.LineKey) bool { return k.Clock == history.ClockICount })
			var got []string
			for _, s := range sus {
				got = append(got, s.Good.Hash+".."+s.Bad.Hash)
				if s.Figure.Benchmark != "uprobe-nop" {
					t.Errorf("%s..%s follows %s, want uprobe-nop (the control did not move)", s.Good.Hash, s.Bad.Hash, s.Figure)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("suspects %v, want %v", got, tc.want)
			}
			if tc.every > 1 {
				// The history's boots of the ends go to the bisect.
				s := sus[0]
				e := EndObs(h, s)
				if e == nil || len(e.Good) != 1 || len(e.Bad) != 1 {
					t.Fatalf("ends of %s..%s: %+v, want one boot each", s.Good.Hash, s.Bad.Hash, e)
				}
				if e.Good[0].Value != level(s.Good.Seq)*(1+1e-5*float64(s.Good.Seq%3)) || e.Good[0].Controls["syscall-count"] == 0 {
					t.Errorf("good end %+v: want its uprobe-nop and its syscall-count", e.Good[0])
				}
				if e.Bad[0].Value >= e.Good[0].Value {
					t.Errorf("bad end %v not below the good end %v", e.Bad[0].Value, e.Good[0].Value)
				}
			}
			var asked []string
			bisect := func(ctx context.Context, good, bad string, fig results.Figure) (string, string, string, error) {
				asked = append(asked, fmt.Sprintf("%s..%s %s", good, bad, fig))
				// The culprit is the first commit whose level is the bad end's.
				var seqG, seqB int
				fmt.Sscanf(good, "c%d", &seqG)
				fmt.Sscanf(bad, "c%d", &seqB)
				for s := seqG + 1; s <= seqB; s++ {
					if level(s) == level(seqB) {
						return "culprit", fmt.Sprintf("c%d", s), "bisect-" + good, nil
					}
				}
				return "no change", "", "bisect-" + good, nil
			}
			var log strings.Builder
			found, err := Resolve(ctx, store, "stream", sus, bisect, func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) })
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(asked, tc.bisects) {
				t.Errorf("bisects %v, want %v", asked, tc.bisects)
			}
			stored, err := store.Culprits(ctx, "stream")
			if err != nil {
				t.Fatal(err)
			}
			var culprits []string
			for _, c := range stored {
				culprits = append(culprits, c.Culprit)
			}
			if len(found) != len(stored) || !reflect.DeepEqual(sortedSet(culprits), tc.culprits) {
				t.Errorf("culprits in the history %v (returned %d), want %v\n%s", culprits, len(found), tc.culprits, log.String())
			}
			cmd := Command("labs/stream.yaml", sus[0], []string{"--arch", "x86_64", "--cpus", "1"})
			want := fmt.Sprintf("lab bisect labs/stream.yaml --good %s --bad %s --benchmark uprobe-nop --producers 1 --arch x86_64 --cpus 1", sus[0].Good.Hash, sus[0].Bad.Hash)
			if cmd != want {
				t.Errorf("command %q, want %q", cmd, want)
			}
		})
	}
}

func sortedSet(s []string) []string {
	m := map[string]bool{}
	var out []string
	for _, x := range s {
		if !m[x] {
			m[x] = true
			out = append(out, x)
		}
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
