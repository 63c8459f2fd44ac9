package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/initramfs/targets"
	"lab/internal/arch"
	"lab/internal/benchmark"
)

// runBenchmark runs one benchmark at p producers and never panics: a
// failure becomes the result's Error, a kernel that cannot run it its
// Unsupported.
func runBenchmark(name string, p int, job protocol.Job) (res protocol.Result) {
	res = protocol.Result{Benchmark: name, Producers: p}
	defer func() {
		if r := recover(); r != nil {
			res.Error = fmt.Sprintf("panic: %v", r)
		}
	}()
	err := dispatch(&res, name, p, job)
	var un unsupported
	switch {
	case errors.As(err, &un):
		res.Unsupported = un.Error()
	case errors.Is(err, ebpf.ErrNotSupported):
		res.Unsupported = err.Error()
	case err != nil:
		res.Error = err.Error()
	}
	return res
}

type unsupported struct{ why string }

func (u unsupported) Error() string { return u.why }

// plan is how the agent runs one benchmark of the table: the loop its
// producers call, and for kernel probes the symbol they attach to.
type plan struct {
	bench  benchmark.Benchmark
	loop   string
	target targets.Target // uprobe kinds
	symbol string         // kprobe kinds: the syscall's entry
}

func planFor(name string) (plan, error) {
	b, ok := benchmark.Lookup(name)
	if !ok {
		return plan{}, unsupported{fmt.Sprintf("this agent does not know benchmark %q", name)}
	}
	a, err := arch.ForGOARCH(runtime.GOARCH)
	if err != nil {
		return plan{}, err
	}
	if why := b.UnsupportedOn(a.Name); why != "" {
		return plan{}, unsupported{why}
	}
	if b.Kind == benchmark.Workload {
		return plan{bench: b}, nil
	}
	if _, ok := targets.LoopIndex(b.Loop); !ok {
		return plan{}, unsupported{fmt.Sprintf("the producer program has no %s loop", b.Loop)}
	}
	pl := plan{bench: b, loop: b.Loop}
	if benchmark.SyscallLoop(b.Loop) {
		pl.symbol = a.Syscall(b.Loop)
		return pl, nil
	}
	t, ok := targets.Lookup(b.Loop)
	if !ok {
		return plan{}, unsupported{fmt.Sprintf("no %s target on %s", b.Loop, runtime.GOARCH)}
	}
	pl.target = t
	return pl, nil
}

func dispatch(res *protocol.Result, name string, p int, job protocol.Job) error {
	pl, err := planFor(name)
	if err != nil {
		return err
	}
	run, ok := runners()[pl.bench.Kind]
	if !ok {
		return unsupported{fmt.Sprintf("this agent cannot run %s benchmarks", pl.bench.Kind)}
	}
	return run(res, pl, p, job)
}

// runners measure each kind of the benchmark table.
func runners() map[benchmark.Kind]func(*protocol.Result, plan, int, protocol.Job) error {
	kprobe := func(res *protocol.Result, pl plan, p int, job protocol.Job) error {
		return kprobeBench(res, string(pl.bench.Kind), pl.symbol, p, job, pl.loop)
	}
	uprobe := func(res *protocol.Result, pl plan, p int, job protocol.Job) error {
		return uprobeBench(res, string(pl.bench.Kind), pl.target, p, job)
	}
	return map[benchmark.Kind]func(*protocol.Result, plan, int, protocol.Job) error{
		benchmark.Count: func(res *protocol.Result, pl plan, p int, job protocol.Job) error {
			res.Attach = "none: " + pl.bench.About
			return measure(res, p, job, nil, pl.loop)
		},
		benchmark.Kprobe: kprobe, benchmark.Kretprobe: kprobe, benchmark.KprobeMulti: kprobe, benchmark.KretprobeMulti: kprobe,
		benchmark.TracefsKretprobe: func(res *protocol.Result, pl plan, p int, job protocol.Job) error {
			return tracefsKretprobe(res, pl.symbol, p, job, pl.loop)
		},
		benchmark.Workload: func(res *protocol.Result, pl plan, p int, job protocol.Job) error {
			return workloadBench(res, pl.bench, p, job)
		},
		benchmark.Uprobe: uprobe, benchmark.Uretprobe: uprobe, benchmark.UprobeMulti: uprobe, benchmark.UretprobeMulti: uprobe,
	}
}

func uprobeBench(res *protocol.Result, kind string, t targets.Target, p int, job protocol.Job) error {
	if err := writeProducer(); err != nil {
		return fmt.Errorf("write the producer program: %w", err)
	}
	loc, err := targets.Locate(producerFile, runtime.GOARCH, t)
	if err != nil {
		return err
	}
	res.Attach = kind + " " + loc.String()
	ex, err := link.OpenExecutable(producerFile)
	if err != nil {
		return err
	}
	attachType := ebpf.AttachNone
	if strings.HasSuffix(kind, "-multi") {
		attachType = ebpf.AttachTraceUprobeMulti
	}
	return probeBench(res, p, job, t.Name, attachType, func(prog *ebpf.Program) (l link.Link, err error) {
		switch kind {
		case "uprobe":
			l, err = ex.Uprobe(t.Name, prog, &link.UprobeOptions{Address: loc.Offset})
		case "uretprobe":
			l, err = ex.Uretprobe(t.Name, prog, &link.UprobeOptions{Address: loc.Offset})
		case "uprobe-multi":
			l, err = ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: []uint64{loc.Offset}})
		case "uretprobe-multi":
			l, err = ex.UretprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: []uint64{loc.Offset}})
		}
		if err != nil {
			return nil, fmt.Errorf("attach %s at %s: %w", kind, loc, err)
		}
		return l, nil
	})
}

func kprobeBench(res *protocol.Result, kind, symbol string, p int, job protocol.Job, loop string) error {
	res.Attach = kind + " " + symbol
	attachType := ebpf.AttachNone
	if strings.HasSuffix(kind, "-multi") {
		attachType = ebpf.AttachTraceKprobeMulti
	}
	return probeBench(res, p, job, loop, attachType, func(prog *ebpf.Program) (l link.Link, err error) {
		switch kind {
		case "kprobe":
			l, err = link.Kprobe(symbol, prog, nil)
		case "kretprobe":
			l, err = link.Kretprobe(symbol, prog, nil)
		case "kprobe-multi":
			l, err = link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{symbol}})
		case "kretprobe-multi":
			l, err = link.KretprobeMulti(prog, link.KprobeMultiOptions{Symbols: []string{symbol}})
		}
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EOPNOTSUPP) {
			return nil, unsupported{fmt.Sprintf("%s on %s: %v", kind, symbol, err)}
		}
		if err != nil {
			return nil, fmt.Errorf("attach %s on %s: %w", kind, symbol, err)
		}
		return l, nil
	})
}

// probeBench measures the loop without the probe, then with a counting
// BPF program attached by attach.
func probeBench(res *protocol.Result, p int, job protocol.Job, loop string, attachType ebpf.AttachType, attach func(*ebpf.Program) (link.Link, error)) error {
	pf, err := probeFree(p, job, loop)
	if err != nil {
		return err
	}
	res.ProbeFree = pf
	m, prog, err := counterProg(attachType)
	if err != nil {
		return err
	}
	defer m.Close()
	defer prog.Close()
	l, err := attach(prog)
	if err != nil {
		return err
	}
	defer l.Close()
	return measure(res, p, job, func() (uint64, error) { return readHits(m) }, loop)
}
