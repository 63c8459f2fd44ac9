package run

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"lab/internal/results"
	"lab/internal/vm"
)

// A run whose boots failed returns a *FailedBootsError that says whether
// the kernel failed any of them: lab run exits 1 then, and 5 (the
// infrastructure's fault, worth a retry) when none was the kernel's.
func TestFailedBootsSayWhoseFault(t *testing.T) {
	panicked := func() (*vm.Outcome, error) {
		return &vm.Outcome{}, &vm.BootError{Kind: results.FailPanic, Reason: "kernel panic"}
	}
	noQEMU := func() (*vm.Outcome, error) {
		return nil, &vm.InfraError{Reason: "start qemu-system-x86_64", Err: os.ErrNotExist}
	}
	for _, tc := range []struct {
		name   string
		fail   map[int]func() (*vm.Outcome, error) // by boot number
		kernel int
		infra  bool
		says   string
	}{
		{"QEMU died", map[int]func() (*vm.Outcome, error){2: noQEMU, 3: noQEMU}, 0, true, "2 boot(s) failed, none the kernel's fault"},
		{"kernel panicked", map[int]func() (*vm.Outcome, error){1: panicked}, 1, false, "1 boot(s) failed, the kernel's fault"},
		{"both", map[int]func() (*vm.Outcome, error){1: panicked, 4: noQEMU}, 1, false, "2 boot(s) failed, 1 the kernel's fault"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &fakeEnv{boot: func(ctx context.Context, n int, c vm.Config) (*vm.Outcome, error) {
				if f, ok := tc.fail[n]; ok {
					return f()
				}
				return goodOutcome(c, 1e6), nil
			}}
			_, _, err := runFake(t, context.Background(), fakeLab(2, 1), env, "")
			var fe *FailedBootsError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v (%T), want a *FailedBootsError", err, err)
			}
			if fe.Failed != len(tc.fail) || fe.Kernel != tc.kernel || fe.Infrastructure() != tc.infra {
				t.Errorf("%+v: infrastructure %v, want %d failed, %d the kernel's, infrastructure %v", fe, fe.Infrastructure(), len(tc.fail), tc.kernel, tc.infra)
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.HasSuffix(fe.Results, "results.json") {
				t.Errorf("message %q, want %q and results.json", err, tc.says)
			}
		})
	}
}
