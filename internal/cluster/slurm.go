package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"lab/internal/exitcode"
	"lab/internal/runfolder"
)

// Slurm is one submission of a lab run to Slurm: the scripts, logs, shard
// folders and merged run all live under Dir, on a filesystem every node
// mounts (as must lab's checkout, Root, and the cache).
type Slurm struct {
	Req       Request // Results and Cache absolute; Results is Dir
	Root      string  // lab's checkout: the jobs run there
	Dir       string
	Partition string
	// Exclusive gives every boot task a node of its own: wall-clock
	// figures of guests sharing a node measure each other.
	Exclusive bool
}

// NewSlurm lays a submission out under dir.
func NewSlurm(req Request, root, dir, partition string, exclusive bool) Slurm {
	req.Results = dir
	return Slurm{Req: req, Root: root, Dir: dir, Partition: partition, Exclusive: exclusive}
}

// Paths of a submission.
func (s Slurm) scripts() string           { return filepath.Join(s.Dir, "scripts") }
func (s Slurm) Logs() string              { return filepath.Join(s.Dir, "logs") }
func (s Slurm) Script(name string) string { return filepath.Join(s.scripts(), name) }

// Merged is where the merged run appears.
func (s Slurm) Merged() string { return LayoutOf(s.Dir).Merged }

func (s Slurm) common(name, output string) []string {
	args := []string{"--parsable", "--job-name=" + dnsName("lab-"+name+"-"+s.Req.Lab.Name), "--chdir=" + s.Root, "--output=" + filepath.Join(s.Logs(), output)}
	if s.Partition != "" {
		args = append(args, "--partition="+s.Partition)
	}
	return args
}

// BuildJob is the sbatch command of the build job.
func (s Slurm) BuildJob() []string {
	return append(append([]string{"sbatch"}, s.common("build", "build-%j.out")...), s.Script("build.sh"))
}

// ArrayJob is the sbatch command of the boot array (tasks is "0-3", or one
// shard "2" for a resubmission), after the build job when build is not "".
func (s Slurm) ArrayJob(tasks, build string) []string {
	args := append([]string{"sbatch"}, s.common("boot", "boot-%A_%a.out")...)
	args = append(args, "--array="+tasks)
	if s.Exclusive {
		args = append(args, "--exclusive")
	}
	if build != "" {
		args = append(args, "--dependency=afterok:"+build, "--kill-on-invalid-dep=yes")
	}
	return append(args, s.Script("boot.sh"))
}

// MergeJob is the sbatch command of the merge job. It waits for the build
// to succeed and for every boot task to end in any state (afterany): a
// shard's lab run exits non-zero when one boot of it fails, and a task
// may be cancelled or lose its node; with afterok the merge would then wait
// for ever (DependencyNeverSatisfied) and the other shards' boots would go
// unreported. lab merge reads the shard folders and says what is missing.
func (s Slurm) MergeJob(build, boots string) []string {
	args := append([]string{"sbatch"}, s.common("merge", "merge-%j.out")...)
	var deps []string
	if build != "" {
		deps = append(deps, "afterok:"+build)
	}
	if boots != "" {
		deps = append(deps, "afterany:"+boots)
	}
	if len(deps) > 0 {
		args = append(args, "--dependency="+strings.Join(deps, ","), "--kill-on-invalid-dep=yes")
	}
	return append(args, s.Script("merge.sh"))
}

// Scripts are the batch scripts by file name: build.sh, boot.sh (one array
// task = one shard), merge.sh, and submit.sh and resubmit.sh, which submit
// them as lab submit slurm does.
func (s Slurm) Scripts() (map[string]string, error) {
	if _, err := Make(s.Req); err != nil {
		return nil, err
	}
	n := s.Req.Shards
	head := func(what string) string {
		return fmt.Sprintf("#!/bin/sh\n# lab %s, %d boot shards: %s\n# Written by lab for Slurm; submit.sh submits every job.\nset -eu\ncd %s\n", s.Req.Lab.Name, n, what, Quote(s.Root))
	}
	out := map[string]string{
		"build.sh": head("build every kernel and initramfs into the shared cache") + "exec " + Line(s.Req.BuildCommand()) + "\n",
		"boot.sh": head("one array task boots one shard's pairs of baseline and patched, from the cache alone") +
			fmt.Sprintf(": \"${SLURM_ARRAY_TASK_ID:?submit as an array: sbatch --array=0-%d boot.sh}\"\n", n-1) +
			"# exec: lab itself gets Slurm's signals, saves what it measured and stops its guest.\n" +
			"exec " + Line(s.Req.BootCommand(fmt.Sprintf("$SLURM_ARRAY_TASK_ID/%d", n))) + "\n",
		"merge.sh": head("one run of the shards, with every report (lab merge expands the pattern)") + "exec " + Line(s.Req.MergeCommand()) + "\n",
	}
	out["submit.sh"] = s.submitScript()
	out["resubmit.sh"] = s.resubmitScript()
	return out, nil
}

func (s Slurm) submitScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# Submits lab %s as lab submit slurm does: the build, then the boot array\n# (after the build succeeded), then the merge (after every boot task ended).\nset -eu\nmkdir -p %s\n", s.Req.Lab.Name, Quote(s.Logs()))
	fmt.Fprintf(&b, "build=$(%s)\nbuild=${build%%%%;*}\n", Line(s.BuildJob()))
	fmt.Fprintf(&b, "boots=$(%s)\nboots=${boots%%%%;*}\n", Line(s.ArrayJob(fmt.Sprintf("0-%d", s.Req.Shards-1), "$build")))
	fmt.Fprintf(&b, "merge=$(%s)\nmerge=${merge%%%%;*}\n", Line(s.MergeJob("$build", "$boots")))
	fmt.Fprintf(&b, "echo \"build $build, boots $boots (array 0-%d), merge $merge; merged run: %s\"\n", s.Req.Shards-1, s.Merged())
	return b.String()
}

// resubmitScript reruns shard K and merges again. It asks Slurm how the
// shard's last task ended (sacct; scontrol while slurmctld remembers it) and
// refuses, unless given --force, a task whose lab run exited with a code a
// rerun would not change: the kernel or the lab failed. QEMU, the node, the
// disk, a signal, a cancel or a lost node (exit 0:N from Slurm) are worth
// a rerun, as is a task Slurm no longer knows.
func (s Slurm) resubmitScript() string {
	futile := exitcode.Codes("run", exitcode.Futile)
	pattern := make([]string, len(futile))
	for i, c := range futile {
		pattern[i] = fmt.Sprint(int(c))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# Resubmits shard K of lab %s and merges again after it: resubmit.sh K\n"+
		"# [--force]. Worth it for a task that exited %s (QEMU, the node,\n"+
		"# the disk; a signal), was cancelled or lost its node; a task whose lab run\n"+
		"# exited %s (the kernel or the lab failed) would fail again: refused\n"+
		"# without --force. (lab help exit-codes says what each code means.)\n"+
		"set -eu\nk=${1:?usage: resubmit.sh K [--force] (K from 0 to %d)}\n",
		s.Req.Lab.Name, exitcode.List(exitcode.Codes("run", exitcode.MayHelp), "or"), exitcode.List(futile, "or"), s.Req.Shards-1)
	fmt.Fprintf(&b, "log=$(ls -t %s/boot-*_\"$k\".out 2>/dev/null | head -n 1)\n", Quote(s.Logs()))
	b.WriteString(`if [ -n "$log" ] && [ "${2:-}" != --force ]; then
	task=${log##*/boot-}
	task=${task%.out}
	code=$(sacct -n -X -P -o ExitCode -j "$task" 2>/dev/null | head -n 1)
	[ -n "$code" ] || code=$(scontrol show job -o "$task" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' | head -n 1)
	case ${code%%:*} in
`)
	fmt.Fprintf(&b, "\t%s)\n\t\techo \"resubmit.sh: shard $k (task $task) exited ${code%%%%:*}: the kernel or the lab failed, and a rerun would fail again; see $log. resubmit.sh $k --force reruns it anyway.\" >&2\n\t\texit 1\n\t\t;;\n\tesac\nfi\n", strings.Join(pattern, "|"))
	fmt.Fprintf(&b, "boot=$(%s)\nboot=${boot%%%%;*}\n", Line(s.ArrayJob("$k", "")))
	fmt.Fprintf(&b, "merge=$(%s)\nmerge=${merge%%%%;*}\n", Line(s.MergeJob("", "$boot")))
	fmt.Fprintf(&b, "echo \"boot $boot (shard $k), merge $merge; merged run: %s\"\n", s.Merged())
	return b.String()
}

// WriteScripts writes the scripts into dir, executable.
func WriteScripts(dir string, scripts map[string]string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for name, text := range scripts {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, nil
}

// Runner runs a command (no shell) and returns its standard output.
type Runner func(ctx context.Context, args []string) ([]byte, error)

// Exec runs commands with os/exec, their stderr in the error.
func Exec(ctx context.Context, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", strings.Join(args[:min(2, len(args))], " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Submission is what lab submit slurm submitted, saved as submission.json
// in the submission's folder.
type Submission struct {
	Dir      string `json:"dir"`
	Shards   int    `json:"shards"`
	Build    string `json:"build_job"`
	Boots    string `json:"boot_array"`
	Merge    string `json:"merge_job"`
	Merged   string `json:"merged"`
	Report   string `json:"report"`
	Logs     string `json:"logs"`
	Resubmit string `json:"resubmit"` // the command that reruns shard K
}

// Submit writes the scripts and submits the build, the boot array and the
// merge with sbatch, each job depending on the one before. Each job's id
// goes into the folder's submission.json as soon as sbatch gives it, and a
// Submit into a folder that holds some (a submitter stopped midway: lab
// watch, killed and started again) submits only the jobs still missing.
func (s Slurm) Submit(ctx context.Context, run Runner) (*Submission, error) {
	scripts, err := s.Scripts()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Logs(), 0o755); err != nil {
		return nil, err
	}
	if _, err := WriteScripts(s.scripts(), scripts); err != nil {
		return nil, err
	}
	sub := &Submission{Dir: s.Dir, Shards: s.Req.Shards, Merged: s.Merged(), Report: filepath.Join(runfolder.Folder{Dir: s.Merged()}.Report(), "report.txt"),
		Logs: s.Logs(), Resubmit: Line([]string{s.Script("resubmit.sh"), "K"})}
	record := filepath.Join(s.Dir, "submission.json")
	if data, err := os.ReadFile(record); err == nil {
		var was Submission
		if err := json.Unmarshal(data, &was); err != nil {
			return nil, fmt.Errorf("%s: %w", record, err)
		}
		sub.Build, sub.Boots, sub.Merge = was.Build, was.Boots, was.Merge
	}
	submit := func(id *string, args []string, what string) error {
		if *id != "" {
			return nil
		}
		got, err := sbatch(ctx, run, args)
		if err != nil {
			return fmt.Errorf("submit %s: %w", what, err)
		}
		*id = got
		data, err := json.MarshalIndent(sub, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(record, data, 0o644)
	}
	if err := submit(&sub.Build, s.BuildJob(), "the build job"); err != nil {
		return nil, err
	}
	if err := submit(&sub.Boots, s.ArrayJob(fmt.Sprintf("0-%d", s.Req.Shards-1), sub.Build), fmt.Sprintf("the boot array (build job %s is queued: scancel it)", sub.Build)); err != nil {
		return sub, err
	}
	err = submit(&sub.Merge, s.MergeJob(sub.Build, sub.Boots), fmt.Sprintf("the merge job (jobs %s and %s are queued)", sub.Build, sub.Boots))
	return sub, err
}

// sbatch runs one sbatch --parsable and returns the job id ("id" or
// "id;cluster" on its first line).
func sbatch(ctx context.Context, run Runner, args []string) (string, error) {
	out, err := run(ctx, args)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	id, _, _ := strings.Cut(strings.TrimSpace(line), ";")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(string(out)))
	}
	return id, nil
}

// Text says what was submitted and where the results will appear.
func (sub *Submission) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "build job %s: lab build into the shared cache\n", sub.Build)
	fmt.Fprintf(&b, "boot array %s: tasks %s_0 .. %s_%d, one shard each (lab run --shard K/%d --no-build), after the build succeeds\n", sub.Boots, sub.Boots, sub.Boots, sub.Shards-1, sub.Shards)
	fmt.Fprintf(&b, "merge job %s: lab merge, after every boot task has ended (a missing or partial shard becomes a caveat)\n", sub.Merge)
	fmt.Fprintf(&b, "merged run: %s\nreport:     %s\nlogs:       %s\n", sub.Merged, sub.Report, sub.Logs)
	fmt.Fprintf(&b, "watch:      squeue -j %s,%s,%s\n", sub.Build, sub.Boots, sub.Merge)
	fmt.Fprintf(&b, "a shard K that failed or was cancelled: %s reruns it, then merges again;\n", sub.Resubmit)
	fmt.Fprintf(&b, "  worth it when its task exited %s (QEMU, the node, the disk; a signal), or was cancelled or lost its node;\n",
		exitcode.List(exitcode.Codes("run", exitcode.MayHelp), "or"))
	fmt.Fprintf(&b, "  not when it exited %s (the kernel or the lab failed: it would fail again): resubmit.sh refuses it without --force\n",
		exitcode.List(exitcode.Codes("run", exitcode.Futile), "or"))
	return b.String()
}

// NewSubmissionDir makes a new folder under parent for one submission
// (slurm-YYYYMMDD-HHMMSS, -2, -3... when that is taken).
func NewSubmissionDir(parent string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("submission folder: %w", err)
	}
	id := "slurm-" + time.Now().UTC().Format("20060102-150405")
	for i := 1; i <= 100; i++ {
		name := id
		if i > 1 {
			name = fmt.Sprintf("%s-%d", id, i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", fmt.Errorf("submission folder: %w", err)
		}
	}
	return "", fmt.Errorf("submission folder: too many submissions named %s in %s", id, parent)
}
