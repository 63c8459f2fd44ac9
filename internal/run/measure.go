package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/shard"
	"lab/internal/testbed"
	"lab/internal/workpool"
)

// measure boots every slot, shape after shape, saving results.json after
// each boot. Within a shape whose plan allows it (icount: a boot's figures
// are guest instructions, so guests side by side do not move them), up to
// Parallel boots run at once; results keep the slots' order. It returns the
// number of failed boots: a failed boot does not stop the run, an
// interruption does.
func (r *Runner) measure(ctx context.Context, plans []testbed.ShapePlan, slots []shard.Slot, art *Artifacts) (int, error) {
	qmpDir, err := os.MkdirTemp("", "lab-qmp-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(qmpDir)
	plugins := r.plugins(ctx, plans)
	failed := 0
	for start := 0; start < len(slots); {
		end := start
		for end < len(slots) && slots[end].Shape == slots[start].Shape {
			end++
		}
		p := plans[slots[start].Shape]
		r.logf("%s, %s: %s (%s), %s clock; %s; %d boot(s) at a time", p.Arch.Name, p.Shape, strings.ToUpper(p.Accel.Name), p.Accel.Reason, p.Clock, p.PinNote, max(p.Parallel, 1))
		for _, c := range p.Caveats {
			r.logf("caveat: %s", c)
		}
		n, err := r.measureShape(ctx, p, slots, start, end, art, qmpDir, r.profilerOf(p, plugins))
		failed += n
		if err != nil {
			return failed, err
		}
		start = end
	}
	return failed, nil
}

// measureShape boots slots[start:end], all of one plan, up to p.Parallel at
// a time. Boot numbers follow the slots, whatever order boots finish in.
// Ctrl-C starts no new boot and collects the running ones; a results.json
// that cannot be saved ends the batch.
// The first boot of each kernel is profiled by prof, and its profile is
// recorded.
func (r *Runner) measureShape(ctx context.Context, p testbed.ShapePlan, slots []shard.Slot, start, end int, art *Artifacts, qmpDir string, prof profiler) (int, error) {
	var (
		mu          sync.Mutex // one finished boot recorded at a time
		failed      int
		interrupted string
	)
	errs, stop := workpool.Run(ctx, end-start, p.Parallel, func(ctx context.Context, i int) error {
		if ctx.Err() != nil {
			return nil // Ctrl-C: no new boot
		}
		n := start + i
		sl := slots[n]
		label := fmt.Sprintf("boot %d/%d %s %s %s", n+1, len(slots), p.Arch.Name, p.Tag(), sl.Variant)
		qmp := filepath.Join(qmpDir, fmt.Sprintf("qmp-%d.sock", sl.Index))
		by := prof
		if sl.Round != 0 {
			by = profiler{}
		}
		b, bp, err := r.boot(ctx, p, sl, art, qmp, label, by)
		b.Round = sl.Round
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
		}
		b = testbed.AddBoot(r.run, b, err)
		if bp != nil && err == nil {
			r.run.Profiles = append(r.run.Profiles, *bp)
		}
		if serr := r.save(); serr != nil {
			return serr
		}
		switch {
		case ctx.Err() != nil:
			interrupted = label
			r.logf("%s: interrupted", label)
		case err != nil:
			r.logf("%s FAILED (%s): %v", label, b.Failure.Kind, err)
		default:
			r.logf("%s: %s in %.1fs (agent up after %.1fs)", label, summary(b), b.Outcome.Wall.Seconds(), b.Outcome.ToAgent.Seconds())
		}
		return nil
	}, func(error) bool { return true })
	if stop >= 0 {
		return failed, errs[stop]
	}
	if ctx.Err() != nil {
		return failed, fmt.Errorf("interrupted during %s: %w", interrupted, ctx.Err())
	}
	return failed, nil
}

// boot runs one guest of plan p: slot sl's variant's kernel, with the
// round's seed (the k-th boot of each kernel draws stream k, so that the
// rounds of a shape are pairs of one seed), profiled by prof: then its
// profile too.
func (r *Runner) boot(ctx context.Context, p testbed.ShapePlan, sl shard.Slot, art *Artifacts, qmp, label string, prof profiler) (results.Boot, *results.Profile, error) {
	v, idx := sl.Variant, sl.Index
	kernel, err := art.Kernel(p.Arch.Name, v)
	if err != nil {
		return results.Boot{Index: idx, Variant: v}, nil, err
	}
	initrd, err := art.Initrd(p.Arch.Name)
	if err != nil {
		return results.Boot{Index: idx, Variant: v}, nil, err
	}
	b := testbed.Booter{Dir: r.dir, QMP: qmp, Boot: r.env.Boot, ConsoleExpect: r.lab.ConsoleExpect, Logf: r.logf,
		Results: func(n int) { r.received(idx, n) }, Seed: sl.Round + 1, Plugin: prof.plugin, StackHz: prof.stackHz}
	boot, err := b.Run(ctx, p, kernel, initrd, v, idx, string(v), label)
	if err != nil || prof == (profiler{}) {
		return boot, nil, err
	}
	return boot, r.profileOf(b, p, kernel, boot), nil
}

func summary(b results.Boot) string {
	var parts []string
	for _, res := range b.Results {
		switch {
		case res.Error != "":
			parts = append(parts, fmt.Sprintf("%s p=%d error: %s", res.Benchmark, res.Producers, res.Error))
		case res.Unsupported != "":
			parts = append(parts, fmt.Sprintf("%s p=%d unsupported: %s", res.Benchmark, res.Producers, res.Unsupported))
		default:
			parts = append(parts, fmt.Sprintf("%s p=%d %.4f M/s", res.Benchmark, res.Producers, protocol.Rate(res.Samples)/1e6))
		}
	}
	return strings.Join(parts, ", ")
}
