package vm

import (
	"os"
	"path/filepath"
	"testing"

	"lab/internal/arch"
)

func TestScanConsole(t *testing.T) {
	for _, tc := range []struct {
		name, line, kind string
	}{
		{"warn", "[    3.1] WARNING: CPU: 1 PID: 77 at kernel/events/uprobes.c:1234 handle_swbp+0x1/0x2", "warning"},
		{"cut here", "[    3.1] ------------[ cut here ]------------", "warning"},
		{"lockdep", "[    3.1] WARNING: possible circular locking dependency detected", "lockdep"},
		{"rcu usage", "[    3.1] WARNING: suspicious RCU usage", "lockdep"},
		{"bug", "[    3.1] BUG: sleeping function called from invalid context at mm/slab.c:1", "bug"},
		{"null", "[    3.1] BUG: kernel NULL pointer dereference, address: 0000000000000000", "bug"},
		{"arm64 oops", "[    3.1] Unable to handle kernel paging request at virtual address dead", "oops"},
		{"oops", "[    3.1] Oops: 0002 [#1] SMP", "oops"},
		{"panic", "[    3.1] Kernel panic - not syncing: Fatal exception", "panic"},
		{"rcu stall", "[   30.1] rcu: INFO: rcu_sched self-detected stall on CPU", "rcu stall"},
		{"starved", "[   30.1] rcu: rcu_sched kthread starved for 5238 jiffies!", "rcu stall"},
		{"hung", "[  120.1] INFO: task agent:1 blocked for more than 120 seconds.", "hung task"},
		{"kunit", "[    2.0]     not ok 3 test_kretprobe", "kunit failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "console.log")
			os.WriteFile(p, []byte("[    0.0] Linux version 6.12.117\r\n"+tc.line+"\r\n[    3.2] lab-agent: powering off\r\n"), 0o644)
			got, err := ScanConsole(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Kind != tc.kind || got[0].Line != 2 {
				t.Fatalf("got %+v, want one %s at line 2", got, tc.kind)
			}
		})
	}
	// Benign lines seen in real boots here must not count.
	p := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(p, []byte(`[    0.0] Kernel command line: console=ttyS0 panic=-1 oops=panic loglevel=6
[    0.1] tsc: Unable to calibrate against PIT
[    0.2] PCI: MMCONFIG at [mem 0xb0000000-0xbfffffff] reserved as E820 entry
[    0.3] calibrate_delay_direct() failed to get a good estimate for loops_per_jiffy.
`), 0o644)
	if got, _ := ScanConsole(p); len(got) != 0 {
		t.Errorf("benign log flagged: %+v", got)
	}
}

// A console that says the host starved a boot-time calibration, as the
// arch table spells it: found with its line; not in a clean boot, nor
// where the arch has no such line.
func TestStarvedCalibration(t *testing.T) {
	x86, _ := arch.Lookup("x86_64")
	arm, _ := arch.Lookup("arm64")
	clean := "[    0.0] Linux version 6.12.117\r\nlab-agent: started\r\n"
	starved := "[    0.0] Linux version 6.12.117\r\n[    0.196174] APIC frequency too slow, disabling apic timer\r\nlab-agent: started\r\n"
	for _, tc := range []struct {
		name, console string
		lines         []string
		line          int
	}{
		{"x86_64 starved", starved, x86.StarvedLines, 2},
		{"x86_64 clean", clean, x86.StarvedLines, 0},
		{"arm64 has no such calibration", starved, arm.StarvedLines, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "console.log")
			os.WriteFile(p, []byte(tc.console), 0o644)
			f, ok, err := starvedCalibration(p, tc.lines)
			if err != nil || ok != (tc.line > 0) || f.Line != tc.line {
				t.Fatalf("got %+v %v %v, want line %d", f, ok, err, tc.line)
			}
			if ok && f.Text != "[    0.196174] APIC frequency too slow, disabling apic timer" {
				t.Errorf("text %q", f.Text)
			}
		})
	}
}
