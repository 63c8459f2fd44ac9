package history

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

func TestTrackQueries(t *testing.T) {
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			t.Run("a version 1 history gains culprits and methods and keeps its boots", func(t *testing.T) {
				where := d.new(t)
				s, err := open(ctx, where, migrations[:1])
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				// What a lab of that version wrote: no method column.
				rawExec(t, where, `INSERT INTO runs (lab, run_id, kind, lab_version, command, started, source_desc, source_id,
					source_tarball_sha256, source_commit, kernel_version, series_name, series_mode, series_sha256)
					VALUES ('lab', 'r1', 'run', 'v1', '[]', '2026-12-01T10:00:00Z', 'd', 'id', '', '', '6.12', '', '', '')`)
				for i := 1; i <= 2; i++ {
					rawExec(t, where, fmt.Sprintf(`INSERT INTO boots (run, boot_index, variant, commit_id, kernel_key, image_sha256,
						arch, cpus, topology, clock, accel, host_name, host_cpu_model, host_cpus, host_kernel, qemu_version,
						host_class, failure) SELECT id, %d, 'baseline', 'c', 'k', 'i', 'x86_64', 1, 't', 'icount', 'tcg',
						'h', 'm', 2, 'k', '7.2', 'm×2 QEMU 7.2', '' FROM runs`, i))
				}
				s = mustOpen(t, where)
				defer s.Close()
				if got := stats(t, s).Boots; got != 2 {
					t.Errorf("after migrating: %d boots, want 2", got)
				}
				if err := s.AddCulprit(ctx, Culprit{Lab: "lab", Line: "s", Good: "a", Bad: "b", Culprit: "b", Outcome: "adjacent"}); err != nil {
					t.Fatal(err)
				}
				mustAdd(t, s, fakeRun("lab", "r2", 2), 2)
			})
			t.Run("a culprit written twice is replaced", func(t *testing.T) {
				s := mustOpen(t, d.new(t))
				defer s.Close()
				c := Culprit{Lab: "lab", Line: "uprobe-nop", Good: "g", Bad: "b", Outcome: "range", BisectRun: "bisect-1", Added: t0}
				for _, culprit := range []string{"", "c2"} {
					c.Culprit = culprit
					if err := s.AddCulprit(ctx, c); err != nil {
						t.Fatal(err)
					}
				}
				got, err := s.Culprits(ctx, "lab")
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].Culprit != "c2" || !got[0].Added.Equal(t0) {
					t.Errorf("culprits %+v, want one, c2", got)
				}
				if err := s.AddCulprit(ctx, Culprit{Lab: "lab"}); err == nil {
					t.Error("a culprit without its commits was taken")
				}
				if other, _ := s.Culprits(ctx, "other"); len(other) != 0 {
					t.Errorf("another lab's culprits: %+v", other)
				}
			})
			t.Run("measured commits are those of this shape and host", func(t *testing.T) {
				s := mustOpen(t, d.new(t))
				defer s.Close()
				r := fakeRun("lab", "r1", 4)
				r.Boots[2].Failure = "panic"
				r.Boots[2].Commit = "c-failed"
				r.Boots[3].Commit = "c-no-place" // a bisect's: no place along the branch
				for i, seq := range []int{1, 2, 3, 0} {
					r.Boots[i].CommitSeq = seq
				}
				mustAdd(t, s, r, 4)
				b := r.Boots[0]
				w := Where{Lab: "lab", Arch: b.Arch, CPUs: b.CPUs, Topology: b.Topology, Clock: b.Clock, Accel: b.Accel, HostCPUModel: b.Host.CPUModel, HostCPUs: b.Host.CPUs}
				got, err := s.Measured(ctx, w)
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]string{"c-patched": "img-patched", "c-baseline": "img-baseline"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("measured %v, want %v", got, want)
				}
				for _, other := range []Where{
					func() Where { o := w; o.Clock = ClockICount; return o }(),
					func() Where { o := w; o.HostCPUs = 64; return o }(),
					func() Where { o := w; o.Lab = "other"; return o }(),
				} {
					if got, err := s.Measured(ctx, other); err != nil || len(got) != 0 {
						t.Errorf("measured in %+v: %v %v, want none", other, got, err)
					}
				}
			})
		})
	}
}
