package testbed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/results"
	"lab/internal/vm"
)

// A boot whose host starved its guest's calibration is booted again, each
// discarded try's console kept, up to starvedTries in all; any other
// failure is recorded as it came.
func TestBootAgainWhenStarved(t *testing.T) {
	starved := &vm.BootError{Kind: results.FailStarved, Reason: "console line 2: APIC frequency too slow"}
	hang := &vm.BootError{Kind: results.FailHang, Reason: "deadline passed"}
	for _, tc := range []struct {
		name    string
		tries   []error // what each try returns; the last repeats
		boots   int
		kind    string
		retried int
	}{
		{"clean", []error{nil}, 1, "", 0},
		{"starved once", []error{starved, nil}, 2, "", 1},
		{"starved every time", []error{starved}, starvedTries, results.FailStarved, starvedTries - 1},
		{"a hang is the kernel's", []error{hang, nil}, 1, results.FailHang, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			boots := 0
			bt := Booter{Logf: t.Logf, Boot: func(_ context.Context, c vm.Config, _ time.Duration, _ func(string)) (*vm.Outcome, error) {
				boots++
				os.WriteFile(c.ConsoleLog(), []byte("try "+strings.Repeat("I", boots)), 0o644)
				return &vm.Outcome{}, tc.tries[min(boots, len(tc.tries))-1]
			}}
			_, retried, err := bt.boot(context.Background(), vm.Config{Dir: dir}, time.Minute, "boot 1")
			if boots != tc.boots || results.FailureKind(err) != tc.kind || len(retried) != tc.retried {
				t.Fatalf("%d boots, err %v, retried %q; want %d boots, kind %q, %d retried", boots, err, retried, tc.boots, tc.kind, tc.retried)
			}
			for i := range retried {
				kept := filepath.Join(dir, "console.try"+string(rune('1'+i))+".log")
				if data, err := os.ReadFile(kept); err != nil || string(data) != "try "+strings.Repeat("I", i+1) {
					t.Errorf("%s: %q %v", kept, data, err)
				}
				if !strings.Contains(retried[i], "APIC frequency too slow") || !strings.Contains(retried[i], filepath.Base(kept)) {
					t.Errorf("retried[%d] = %q", i, retried[i])
				}
			}
		})
	}
}
