package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/initramfs/targets"
)

// kernelPrefix is the arch's syscall entry prefix, e.g. __x64_sys_.
func kernelPrefix() string {
	if runtime.GOARCH == "arm64" {
		return "__arm64_sys_"
	}
	return "__x64_sys_"
}

func getpgid() { unix.Getpgid(0) }

// flock on an fd that is never open: the syscall fails fast with EBADF after
// its entry, which is what the objpool series' flock loop measured.
func flock() { unix.Flock(0x7878, 0x8787) }

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

func dispatch(res *protocol.Result, name string, p int, job protocol.Job) error {
	switch name {
	case "usermode-count":
		res.Attach = "none: the nop target called from user space, counted in user space"
		return measure(res, p, job, nil, targets.Nop)
	case "syscall-count":
		res.Attach = "none: getpgid() called from user space, counted in user space"
		return measure(res, p, job, nil, getpgid)
	case "kprobe", "kretprobe", "kprobe-multi", "kretprobe-multi":
		return kprobeBench(res, name, kernelPrefix()+"getpgid", p, job, getpgid)
	case "kretprobe-flock":
		return kprobeBench(res, "kretprobe", kernelPrefix()+"flock", p, job, flock)
	case "kretprobe-flock-tracefs":
		return tracefsKretprobe(res, kernelPrefix()+"flock", p, job, flock)
	}
	for _, kind := range []string{"uretprobe-multi-", "uprobe-multi-", "uretprobe-", "uprobe-"} {
		if target, ok := strings.CutPrefix(name, kind); ok {
			return uprobeBench(res, strings.TrimSuffix(kind, "-"), target, p, job)
		}
	}
	return unsupported{fmt.Sprintf("this agent does not know benchmark %q", name)}
}

func uprobeBench(res *protocol.Result, kind, target string, p int, job protocol.Job) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	t, ok := targets.Lookup(target)
	if !ok {
		return unsupported{fmt.Sprintf("no %s target on %s", target, runtime.GOARCH)}
	}
	loc, err := targets.Locate(exe, t)
	if err != nil {
		return err
	}
	res.Attach = kind + " " + loc.String()
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return err
	}
	attachType := ebpf.AttachNone
	if strings.HasSuffix(kind, "-multi") {
		attachType = ebpf.AttachTraceUprobeMulti
	}
	return probeBench(res, p, job, t.Call, attachType, func(prog *ebpf.Program) (l link.Link, err error) {
		switch kind {
		case "uprobe":
			l, err = ex.Uprobe(t.Symbol, prog, &link.UprobeOptions{Address: loc.Offset})
		case "uretprobe":
			l, err = ex.Uretprobe(t.Symbol, prog, &link.UprobeOptions{Address: loc.Offset})
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

func kprobeBench(res *protocol.Result, kind, symbol string, p int, job protocol.Job, fn func()) error {
	res.Attach = kind + " " + symbol
	attachType := ebpf.AttachNone
	if strings.HasSuffix(kind, "-multi") {
		attachType = ebpf.AttachTraceKprobeMulti
	}
	return probeBench(res, p, job, fn, attachType, func(prog *ebpf.Program) (l link.Link, err error) {
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

// probeBench measures fn's loop without the probe, then with a counting
// BPF program attached by attach.
func probeBench(res *protocol.Result, p int, job protocol.Job, fn func(), attachType ebpf.AttachType, attach func(*ebpf.Program) (link.Link, error)) error {
	pf, err := probeFree(p, job, fn)
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
	return measure(res, p, job, func() (uint64, error) { return readHits(m) }, fn)
}
