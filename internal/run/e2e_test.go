package run_test

// End-to-end tests: real kernels built from Debian's linux-source-6.12, real
// QEMU boots, real BPF uprobes in the guest. They share lab's kernel cache
// ($LAB_CACHE, default ~/.cache/lab), so only the first run on a machine
// compiles kernels. They run when LAB_E2E=1 is set, as ./scripts/test does;
// plain `go test ./...` is the fast suite.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/run/runtest"
	"lab/internal/testenv"
	"lab/internal/vm"
)

func e2e(t *testing.T) { testenv.E2E(t, "builds and boots real kernels") }

// TestArch runs lab run's checks of one arch on x86_64 (see runtest.Arch);
// package arm64e2e runs them on arm64, beside this one.
func TestArch(t *testing.T) {
	e2e(t)
	runtest.Arch(t, "x86_64")
}

// A guest that panics (here: no init in the initramfs) ends its boot with an
// error quoting the console, and no QEMU is left behind, on each x86_64
// machine: q35 (a guest that calibrates its TSC) and microvm (one given its
// TSC rate, as lab's TCG plans do).
func TestBootPanicIsReported(t *testing.T) {
	e2e(t)
	kernel, _ := runtest.BuiltKernel(t)
	empty := filepath.Join(t.TempDir(), "empty.cpio")
	os.WriteFile(empty, nil, 0o644)
	khz, _ := vm.HostTSCkHz()
	for _, tc := range []struct {
		machine string
		tscKHz  int64
	}{{"q35", 0}, {"microvm", khz}} {
		t.Run(tc.machine, func(t *testing.T) {
			if tc.tscKHz == 0 && tc.machine == "microvm" {
				t.Skip("the host's TSC rate is unknown here: no TCG guest boots on microvm")
			}
			cfg := runtest.BootConfig(t, kernel, empty, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, Samples: 1})
			cfg.TSCkHz = tc.tscKHz
			if got := cfg.Machine().Name(); got != tc.machine {
				t.Fatalf("the guest boots on %s, want %s", got, tc.machine)
			}
			_, err := vm.Boot(context.Background(), cfg, 2*time.Minute, nil)
			var be *vm.BootError
			if !errors.As(err, &be) || be.Kind != results.FailPanic || !strings.Contains(err.Error(), "Kernel panic") {
				t.Fatalf("err = %v", err)
			}
			runtest.NoQEMU(t, cfg)
		})
	}
}

// Pinning puts each vCPU thread on the host CPU of the plan, as the kernel
// reports it for QEMU's thread while the guest runs.
func TestBootPinsVCPUs(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"usermode-count"}, Producers: []int{1}, Samples: 1})
	host := runtime.NumCPU() - 1 // the last host CPU
	cfg.Pin = []int{host}
	out, err := vm.Boot(context.Background(), cfg, 2*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pinned) != 1 || out.Pinned[0] != host || len(out.VCPUs) != 1 {
		t.Fatalf("pinned %v, vCPUs %+v", out.Pinned, out.VCPUs)
	}
	runtest.NoQEMU(t, cfg)
}

// A guest that runs past its deadline is stopped, with an error saying so.
func TestBootDeadline(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, Samples: 600})
	start := time.Now()
	// 5 s: before the agent's hello or after it, the guest is stopped as
	// hung; a longer deadline was guest time spent running uprobe-nop.
	_, err := vm.Boot(context.Background(), cfg, 5*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "deadline of 5s passed") || results.FailureKind(err) != results.FailHang {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("stopping took %v", time.Since(start))
	}
	runtest.NoQEMU(t, cfg)
}

// Cancelling (Ctrl-C) stops the guest at once and keeps what it sent.
func TestBootInterrupt(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, Samples: 600})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the agent has said hello.
		for ctx.Err() == nil {
			if fi, err := os.Stat(cfg.ResultsPath()); err == nil && fi.Size() > 0 {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	out, err := vm.Boot(ctx, cfg, 5*time.Minute, nil)
	cancel()
	if !errors.Is(err, context.Canceled) || results.FailureKind(err) != results.FailInterrupt {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if out == nil || len(out.Records) == 0 || out.Records[0].Type != protocol.TypeHello {
		t.Errorf("records kept: %+v", out)
	}
	runtest.NoQEMU(t, cfg)
}

// A QEMU stopped by a signal from outside lab ends cleanly (exit 0): that
// is not the guest's doing. Alone, it is an infrastructure failure; with
// lab's own cancel just after (a scheduler's cancel signals both), an
// interruption, so that the boot is not recorded as the kernel's failure.
func TestBootQEMUSignalledFromOutside(t *testing.T) {
	e2e(t)
	kernel, initrd := runtest.BuiltKernel(t)
	for _, tc := range []struct {
		name       string
		labCancels bool
		want       string
	}{
		{"alone", false, results.FailInfra},
		{"with lab's cancel", true, results.FailInterrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := runtest.BootConfig(t, kernel, initrd, protocol.Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1}, Samples: 600})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for ctx.Err() == nil {
					if fi, err := os.Stat(cfg.ResultsPath()); err == nil && fi.Size() > 0 {
						if pid := runtest.QEMUOf(cfg.ConsoleLog()); pid > 0 {
							syscall.Kill(pid, syscall.SIGTERM)
							if tc.labCancels {
								time.Sleep(500 * time.Millisecond)
								cancel()
							}
							return
						}
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			_, err := vm.Boot(ctx, cfg, 5*time.Minute, nil)
			if got := results.FailureKind(err); got != tc.want {
				t.Errorf("failure %q (%v), want %q", got, err, tc.want)
			}
			runtest.NoQEMU(t, cfg)
		})
	}
}
