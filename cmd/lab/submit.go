package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"lab/internal/cluster"
	"lab/internal/flagval"
)

const submitHelp = `lab submit slurm LAB.yaml --shards N [--partition P] [lab run flags]: run a lab
on a Slurm cluster. lab schedules nothing itself; it submits with sbatch:
  1. a build job: lab build (every kernel and initramfs into the shared cache);
  2. a boot array, --array=0-(N-1), after the build succeeded (afterok): task K
     runs lab run --shard K/N --no-build with the same flags, booting its
     pairs of baseline and patched from the cache (under KVM where the node
     has a usable /dev/kvm: lab decides on each node);
  3. a merge job after every task has ended, whatever its state (afterany):
     lab merge makes one run of the shards and every report. A task that
     failed or was cancelled, or whose node died, leaves a partial shard or
     none: the merge names it in a caveat, and the printed resubmit.sh K
     reruns that shard and merges again, filling the hole. (With afterok, a
     single failed boot in one shard would leave the merge pending for ever.)
It prints the job ids and where the merged report will appear. lab's
checkout, this lab binary, --cache and --results must be on a filesystem
every node mounts. Everything of one submission is in
RESULTS/LAB/slurm-ID: scripts/, logs/, shards/, merged/.

Flags:
`

func submitCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f planFlags
	var partition flagval.String
	exclusive := flagval.Bool{V: true}
	f.register(fs)
	fs.Var(&partition, "partition", "the Slurm partition of every job (default: the cluster's)")
	fs.Var(&exclusive, "exclusive", "a node of its own for every boot task: wall-clock figures of guests sharing a node measure each other (--exclusive=false for icount runs)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), submitHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) != 2 || inv.args[0] != cluster.EngineSlurm {
			return usagef("submit: lab submit slurm LAB.yaml --shards N (Slurm is the engine lab submits to; for GitHub Actions and Kubernetes, lab plan --emit writes the template)")
		}
		req, root, err := f.request(fs, inv.args[1])
		if err != nil {
			return err
		}
		if _, err := cluster.Make(req); err != nil {
			return usageError{err.Error()}
		}
		results := req.Results
		if results == "" {
			results = filepath.Join(root, "results")
		}
		dir, err := cluster.NewSubmissionDir(filepath.Join(results, req.Lab.Name))
		if err != nil {
			return err
		}
		s, err := slurmSubmission(req, root, dir, partition.V, exclusive.V)
		if err != nil {
			return err
		}
		sub, err := s.Submit(ctx, cluster.Exec)
		if err != nil {
			return err
		}
		fmt.Fprint(inv.out, sub.Text())
		return nil
	}
}
