package labenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"lab/internal/cluster"
	"lab/internal/history"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/watch"
)

// Slurm is lab watch's Env on a Slurm cluster (lab watch --submit slurm):
// a posting's versions go to the cluster as lab submit slurm sends a lab
// run (a build job, a boot array, a merge job), and a later pass collects
// the merged run (watch.Submitter). The versions' mboxes, the scripts, the
// logs and the runs are in one submission folder under the results, which
// every node mounts, as it does lab's checkout and the cache.
type Slurm struct {
	Settings   testbed.Settings
	ModuleRoot string
	LabVersion string
	// Exe is the lab binary the jobs run; Flags the lab and build flags
	// they are given (--accel, -j, --parallel, --sandbox, a lab's own).
	Exe   string
	Flags []cluster.Flag
	// Shards, Partition and Exclusive are lab submit slurm's.
	Shards    int
	Partition string
	Exclusive bool
	// Command runs sbatch and squeue (cluster.Exec).
	Command cluster.Runner
	Out     io.Writer
	// History takes the merged run's boots; nil for none.
	History *history.Store
}

// Prepare makes the job's submission folder under the results and writes
// the versions' mboxes into it; nothing is submitted yet.
func (s *Slurm) Prepare(ctx context.Context, job watch.Job) (string, error) {
	dir, err := cluster.NewSubmissionDir(filepath.Join(s.Settings.ResultsDir, job.Lab.Name))
	if err != nil {
		return "", err
	}
	for _, v := range job.Versions {
		mbx := mboxIn(dir, v.Name)
		if err := os.MkdirAll(filepath.Dir(mbx), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(mbx, v.Mbox, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// Submit submits the job prepared in dir as lab submit slurm does (the
// jobs a Submit before it got in are not submitted again).
func (s *Slurm) Submit(ctx context.Context, job watch.Job, dir string) error {
	// A series from a list is new to the lab's source, or in it already:
	// mode auto tells which, as lab watch's own runs do.
	flags := append(slices.Clone(s.Flags), cluster.Flag{Name: "mode", Value: spec.ModeAuto})
	for _, v := range job.Versions {
		flags = append(flags, cluster.Flag{Name: "series", Value: mboxIn(dir, v.Name)})
	}
	lab := *job.Lab
	lab.Mode = spec.ModeAuto
	req := cluster.Request{Lab: &lab, LabFile: job.Lab.Path, Args: cluster.Args(flags), Shards: s.Shards, Cache: s.Settings.CacheDir, Exe: s.Exe}
	sub, err := cluster.NewSlurm(req, s.ModuleRoot, dir, s.Partition, s.Exclusive).Submit(ctx, s.Command)
	if err != nil {
		return err
	}
	fmt.Fprint(s.Out, sub.Text())
	return nil
}

// mboxIn is where a version's mbox is in a submission folder.
func mboxIn(dir, version string) string { return filepath.Join(dir, "series", version+".mbx") }

// Collect is what the submission in dir came to once its merge job has
// ended; nil before, and when Slurm cannot be asked (it is asked again at
// the next pass).
func (s *Slurm) Collect(ctx context.Context, job watch.Job, dir string) (*watch.Result, error) {
	data, err := os.ReadFile(filepath.Join(dir, "submission.json"))
	if err != nil {
		return nil, fmt.Errorf("the submission in %s: %w", dir, err)
	}
	var sub cluster.Submission
	if err := json.Unmarshal(data, &sub); err != nil {
		return nil, fmt.Errorf("the submission in %s: %w", dir, err)
	}
	if ended, err := s.ended(ctx, sub.Merge); err != nil || !ended {
		if err != nil {
			fmt.Fprintf(s.Out, "watch: Slurm did not say whether merge job %s has ended (asked again at the next pass): %v\n", sub.Merge, err)
		}
		return nil, nil
	}
	out := &watch.Result{Kind: watch.Verdict, RunDir: sub.Merged}
	res, err := results.Load(filepath.Join(sub.Merged, runfolder.ResultsFile))
	if err != nil {
		out.Kind, out.Summary = fromLogs(sub.Logs)
		return out, nil
	}
	d := describe(out, res, sub.Merged, s.LabVersion)
	if err := record(ctx, s.History, res); err != nil {
		fmt.Fprintf(s.Out, "lab: warning: the history did not take run %s: %v (lab history import %s adds it later)\n", res.RunID, err, sub.Merged)
	}
	if d != nil {
		newest := job.Versions[len(job.Versions)-1]
		noisy(d, newest.Name, out)
		if slower := slowerRows(d, newest.Name); len(slower) > 0 && newest.Posting.Total > 1 {
			// lab watch's own runs bisect here; a cluster run's reply says
			// how to, rather than run it on the watcher's host.
			out.Summary += fmt.Sprintf("\n\nWhich patch made it slower was not measured on the cluster: lab bisect --each on a copy of %s\nwhose series: is %s says.\n",
				job.Lab.Path, mboxIn(dir, newest.Name))
		}
	}
	return out, nil
}

// Run submits the job and waits for it: the Env for a single pass that
// must answer what it starts.
func (s *Slurm) Run(ctx context.Context, job watch.Job) (*watch.Result, error) {
	dir, err := s.Prepare(ctx, job)
	if err != nil {
		return nil, err
	}
	if err := s.Submit(ctx, job, dir); err != nil {
		return nil, err
	}
	for {
		if res, err := s.Collect(ctx, job, dir); res != nil || err != nil {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
}

// ended reports whether job has left Slurm's queue or ended in it.
func (s *Slurm) ended(ctx context.Context, job string) (bool, error) {
	out, err := s.Command(ctx, []string{"squeue", "--noheader", "--jobs=" + job, "--format=%T"})
	if err != nil && strings.Contains(err.Error(), "Invalid job id") {
		// squeue refuses a job it no longer knows (MinJobAge after its end).
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, state := range strings.Fields(string(out)) {
		if slices.Contains([]string{"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "RESIZING", "STAGE_OUT"}, state) {
			return false, nil
		}
	}
	return true, nil
}

// logKinds tell a submission that made no merged run by what lab printed
// in its jobs' logs: the messages of the errors kindOf tells apart in a
// run of lab watch's own (TestLogKindsAreTheErrors keeps them so).
var logKinds = []struct {
	kind watch.Kind
	says *regexp.Regexp
}{
	{watch.NotApplied, regexp.MustCompile(`: does not apply:|applies neither forward nor in reverse`)},
	{watch.SameImage, regexp.MustCompile(`no code change, nothing booted`)},
	{watch.BuildFailed, regexp.MustCompile(`build \S+ at \S+ in \S+: `)},
}

// fromLogs is the kind and the reply's text of a submission whose merge
// made no run: the first log that says what failed, quoted.
func fromLogs(logs string) (watch.Kind, string) {
	files, _ := filepath.Glob(filepath.Join(logs, "*.out"))
	slices.Sort(files) // build-*, then boot-*, then merge-*
	var tails []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		tail := lastLines(string(data), 20)
		for _, k := range logKinds {
			if k.says.MatchString(string(data)) {
				return k.kind, fmt.Sprintf("The run on the cluster stopped (%s):\n\n%s", filepath.Base(f), indent(tail))
			}
		}
		tails = append(tails, filepath.Base(f)+":\n"+indent(tail))
	}
	return watch.Infra, "The run on the cluster made no merged run, and its logs name no fault of the series:\n\n" + strings.Join(tails, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
