package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/exitcode"
)

// resubmit.sh K asks Slurm how shard K's last task ended, and reruns it
// unless its lab run exited with a code a rerun would not change (the
// kernel or the lab failed): 5 (QEMU, the node, the disk) is rerun, 1 is
// refused without --force. Slurm is faked on the PATH: sbatch logs its
// calls, sacct and scontrol answer as a cluster with or without
// accounting does.
func TestResubmitAsksHowTheTaskEnded(t *testing.T) {
	s := slurmFixture(t, 2)
	scripts, err := s.Scripts()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteScripts(filepath.Join(s.Dir, "scripts"), scripts); err != nil {
		t.Fatal(err)
	}
	noAccounting := "echo 'sacct: error: Slurm accounting storage is disabled' >&2; exit 1"
	scontrol := func(code string) string {
		return fmt.Sprintf("echo 'JobId=301 ArrayJobId=300 ArrayTaskId=1 JobState=FAILED ExitCode=%s DerivedExitCode=0:0'", code)
	}
	for _, tc := range []struct {
		name           string
		log            bool   // shard 1 ran: logs/boot-300_1.out
		sacct          string // the fake's shell body
		scontrol       string
		force          bool
		resubmits      bool
		says           string
		sacctAskedTask bool
	}{
		{"never ran", false, "echo 1:0", "", false, true, "boot 201 (shard 1)", false},
		{"infrastructure (sacct)", true, "echo 5:0", "", false, true, "boot 201 (shard 1)", true},
		{"cancelled (sacct)", true, "echo 0:15", "", false, true, "boot 201 (shard 1)", true},
		{"the kernel failed (sacct)", true, "echo 1:0", "", false, false, "shard 1 (task 300_1) exited 1: the kernel or the lab failed", true},
		{"the kernel failed, forced", true, "echo 1:0", "", true, true, "boot 201 (shard 1)", false},
		{"a bad lab (scontrol)", true, noAccounting, scontrol("2:0"), false, false, "exited 2", true},
		{"stopped (scontrol)", true, noAccounting, scontrol("143:0"), false, true, "boot 201 (shard 1)", true},
		{"forgotten", true, noAccounting, "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1", false, true, "boot 201 (shard 1)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(s.Logs())
			os.MkdirAll(s.Logs(), 0o755)
			if tc.log {
				os.WriteFile(filepath.Join(s.Logs(), "boot-300_1.out"), []byte("lab: ...\n"), 0o644)
				// An older task of another shard whose number ends the same.
				os.WriteFile(filepath.Join(s.Logs(), "boot-299_11.out"), nil, 0o644)
			}
			bin := t.TempDir()
			calls := filepath.Join(bin, "calls")
			fake := map[string]string{
				"sbatch":   fmt.Sprintf("echo \"sbatch $*\" >> %s\nn=$(grep -c sbatch %s)\necho \"$((200 + n));c\"", Quote(calls), Quote(calls)),
				"sacct":    fmt.Sprintf("echo \"sacct $*\" >> %s\n%s", Quote(calls), tc.sacct),
				"scontrol": fmt.Sprintf("echo \"scontrol $*\" >> %s\n%s", Quote(calls), tc.scontrol),
			}
			for name, body := range fake {
				if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{s.Script("resubmit.sh"), "1"}
			if tc.force {
				args = append(args, "--force")
			}
			cmd := exec.Command("sh", args...)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			log, _ := os.ReadFile(calls)
			if (err == nil) != tc.resubmits || strings.Contains(string(log), "sbatch") != tc.resubmits || !strings.Contains(string(out), tc.says) {
				t.Errorf("resubmits %v, want %v; output %q, want %q; calls:\n%s", err == nil, tc.resubmits, out, tc.says, log)
			}
			if asked := strings.Contains(string(log), "sacct -n -X -P -o ExitCode -j 300_1"); asked != tc.sacctAskedTask {
				t.Errorf("sacct asked about task 300_1: %v, want %v; calls:\n%s", asked, tc.sacctAskedTask, log)
			}
		})
	}
}

// The advice lab submit prints tells the codes worth a resubmission from
// those that are not, as the exit-code table has them.
func TestSubmissionAdvice(t *testing.T) {
	text := (&Submission{Shards: 2, Resubmit: "resubmit.sh K"}).Text()
	for _, w := range []string{
		"exited " + exitcode.List(exitcode.Codes("run", exitcode.MayHelp), "or") + " (QEMU, the node, the disk; a signal)",
		"not when it exited " + exitcode.List(exitcode.Codes("run", exitcode.Futile), "or") + " (the kernel or the lab failed",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("advice lacks %q:\n%s", w, text)
		}
	}
}
