package vm

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// CPUSample is how much host CPU time each vCPU thread of QEMU had used when
// the guest had sent Records records: from two samples, the share of a host
// CPU each vCPU got while the guest produced the records between them.
// Under the wall clock that share is what a figure rests on: two producers
// on two vCPUs contend only while both vCPU threads run at once.
type CPUSample struct {
	Records int             `json:"records"`
	At      time.Duration   `json:"at_ns"`  // since QEMU started
	CPU     []time.Duration `json:"cpu_ns"` // per vCPU, user + system
}

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on every arch
// Linux builds with today).
const clockTick = 10 * time.Millisecond

// threadCPU is a thread's user + system time from /proc/PID/task/TID/stat.
func threadCPU(pid, tid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("thread %d: unreadable stat", tid)
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("thread %d: short stat", tid)
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("thread %d: unreadable stat times", tid)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// sampleCPU reads every vCPU thread's CPU time; nil when QEMU is gone.
func sampleCPU(pid int, vcpus []VCPU, records int, at time.Duration) *CPUSample {
	s := &CPUSample{Records: records, At: at}
	for _, v := range vcpus {
		t, err := threadCPU(pid, v.ThreadID)
		if err != nil {
			return nil
		}
		s.CPU = append(s.CPU, t)
	}
	return s
}

// VCPUShare is, for the record numbered n (0 = the agent's hello), the
// share of a host CPU each vCPU thread got between the record before it
// and it; nil when the boot was not sampled there.
func (o *Outcome) VCPUShare(n int) []float64 {
	var prev, cur *CPUSample
	for i := range o.CPUSamples {
		s := &o.CPUSamples[i]
		if s.Records <= n {
			prev = s
		}
		if s.Records == n+1 && cur == nil {
			cur = s
		}
	}
	if prev == nil || cur == nil || cur.At <= prev.At || len(prev.CPU) != len(cur.CPU) {
		return nil
	}
	wall := float64(cur.At - prev.At)
	out := make([]float64, len(cur.CPU))
	for i := range cur.CPU {
		out[i] = float64(cur.CPU[i]-prev.CPU[i]) / wall
	}
	return out
}
