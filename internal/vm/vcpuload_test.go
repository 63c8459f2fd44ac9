package vm

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestVCPUShare(t *testing.T) {
	o := &Outcome{CPUSamples: []CPUSample{
		{Records: 0, At: 1 * time.Second, CPU: []time.Duration{0, 0}},
		{Records: 1, At: 2 * time.Second, CPU: []time.Duration{500 * time.Millisecond, 0}},
		{Records: 2, At: 12 * time.Second, CPU: []time.Duration{10500 * time.Millisecond, 4 * time.Second}},
		{Records: 4, At: 20 * time.Second, CPU: []time.Duration{12 * time.Second, 5 * time.Second}},
	}}
	// Record 1, the first result: from the hello (1 record sent) to it (2).
	got := o.VCPUShare(1)
	if len(got) != 2 || math.Abs(got[0]-1) > 1e-9 || math.Abs(got[1]-0.4) > 1e-9 {
		t.Errorf("record 1: %v, want [1 0.4]", got)
	}
	if got := o.VCPUShare(2); got != nil {
		t.Errorf("records 2 and 3 arrived within one tick: %v, want nil", got)
	}
	if got := o.VCPUShare(9); got != nil {
		t.Errorf("record 9: %v", got)
	}
}

func TestThreadCPU(t *testing.T) {
	pid := os.Getpid()
	if _, err := threadCPU(pid, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := threadCPU(pid, 1<<30); err == nil {
		t.Error("a thread that does not exist has CPU time")
	}
}
