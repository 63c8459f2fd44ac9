package runtest

import "testing"

// The uprobe path's share of a sampled profile, on the profiles of loaded
// hosts that failed the check when it asked uprobe_notify_resume for a
// tenth of all samples; and the user-mode loop's share of the busy ones.
func TestHitPathShare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		samples  uint64
		children map[string]uint64
		ok       bool
	}{
		{"x86_64, samples piled at the exception's exit", 78,
			map[string]uint64{"asm_exc_int3": 69, "irqentry_exit_to_user_mode": 69, "uprobe_notify_resume": 4}, true},
		{"arm64, one vCPU of two idle", 242,
			map[string]uint64{"default_idle_call": 117, "el0_softstp": 26, "el0_brk64": 23, "uprobe_notify_resume": 21}, true},
		{"no hit in the profile", 200, map[string]uint64{"[user]": 150, "do_syscall_64": 50}, false},
		{"all idle", 40, map[string]uint64{"do_idle": 40}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok := hitPathSamples(tc.children) >= busySamples(tc.samples, tc.children)/10; ok != tc.ok {
				t.Errorf("path %d of %d busy samples: ok %v, want %v", hitPathSamples(tc.children), busySamples(tc.samples, tc.children), ok, tc.ok)
			}
		})
	}
}

func TestUserModeShareOfTheBusySamples(t *testing.T) {
	// One producer on 2 vCPUs: 37 of 115 samples in user mode failed the
	// check on arm64 (its idle count was not printed; 70 is a stand-in).
	children := map[string]uint64{"[user]": 37, "default_idle_call": 70}
	if busy := busySamples(115, children); children["[user]"] < busy/3 {
		t.Errorf("user mode in 37 of %d busy samples: want at least a third", busy)
	}
	if busy := busySamples(115, map[string]uint64{"[user]": 37}); 37 >= busy/3 {
		t.Errorf("37 of %d samples, none idle: the check should fail", busy)
	}
}
