package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"lab/internal/flagval"
	"lab/internal/merge"
	"lab/internal/publish"
	"lab/internal/report"
	"lab/internal/results"
	"lab/internal/runfolder"
	"lab/internal/version"
)

const mergeHelp = `lab merge RUN-DIR... -o DIR [--complete]: make one run of the shards of a run
(lab run LAB.yaml --shard K/N on each host) and write every report of it.

A RUN-DIR may be a pattern (results/shards/uprobe-srcu/*): lab expands it, for
engines that run lab without a shell. The shards must be of the same run: the
same lab (name, matrix, claims, series), lab version, kernel keys and initramfs
keys; lab names the field that differs. Each boot keeps the host it ran on;
with boots from several hosts the reports judge baseline against patched on
pairs booted back to back on one host.

A missing shard, or a partial one (a cancelled task, a lost node), is merged
with a caveat naming it and its boots; --complete refuses it instead (exit 1).
When a shard was run twice (resubmitted), the folder that is complete wins.
Merging again into the same -o folder replaces the merge.

The merged run's boots are added to the history: by default history.db in
the results folder (results/ for -o results/LAB/RUN, else the folder -o is
in); a boot a shard's run added already is not added again.

Flags:
`

func mergeCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var out, junit flagval.String
	var complete flagval.Bool
	var gates report.GateFlags
	var hist historyFlags
	fs.Var(&out, "o", "the merged run's folder (required): results.json, boots/, report/")
	fs.Var(&complete, "complete", "refuse a missing or partial shard instead of merging with a caveat")
	fs.Var(&junit, "junit", "also write the report as JUnit XML to this file")
	gates.RegisterFlags(fs)
	hist.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mergeHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) == 0 {
			return usagef("merge takes the shards' run folders, got none")
		}
		if out.V == "" {
			return usagef("merge: -o DIR is required: where the merged run goes")
		}
		shards, err := merge.Load(inv.args)
		if err != nil {
			return err
		}
		res, err := merge.Merge(shards, merge.Options{Complete: complete.V, Command: append([]string{"lab"}, inv.raw...), RunID: filepath.Base(filepath.Clean(out.V))})
		if err != nil {
			return err
		}
		// lab run's layout puts the history in the results folder:
		// results/history.db for -o results/LAB/RUN.
		where, err := hist.target(mergeResultsFolder(out.V, res.Run.Lab))
		if err != nil {
			return err
		}
		if err := merge.Write(res, out.V, shards); err != nil {
			return err
		}
		err = reportMerged(res, out.V, junit.V, &gates, inv.out)
		recordHistory(ctx, res.Run, out.V, where, inv.out, inv.errOut)
		return err
	}
}

// reportMerged writes the merged run's reports as lab run and lab report
// do, with the merge's caveats first.
func reportMerged(res *merge.Result, dir, junit string, gates *report.GateFlags, out io.Writer) error {
	d := mergedDocument(res.Run, dir, res.Caveats)
	o, err := report.Outputs(d, res.Run, isTerminal(out))
	if err != nil {
		return err
	}
	// The merge's own lines come before the paths publish prints.
	for _, c := range res.Caveats {
		o.Text += fmt.Sprintf("caveat: %s\n", c)
	}
	o.Text += fmt.Sprintf("merged %d boots of %d shard folders into %s\n", len(res.Run.Boots), len(distinct(res.From)), dir)
	folder := runfolder.Folder{Dir: dir}
	if _, err := publish.Publish(o, publish.Options{ReportDir: folder.Report(), TablePath: folder.Table(), JUnitPath: junit, Out: out, CI: true}); err != nil {
		return err
	}
	return gates.Check(d)
}

// mergedDocument is the report of a merged run: caveats (a missing or
// partial shard) lead the report's own.
func mergedDocument(r *results.Run, dir string, caveats []string) *report.Document {
	d := report.Build(r, dir, version.Lab(""))
	var lead []string
	for _, c := range caveats {
		if !slices.Contains(d.Caveats, c) {
			lead = append(lead, c)
		}
	}
	d.Caveats = append(lead, d.Caveats...)
	return d
}

func distinct(m map[int]string) []string {
	var out []string
	for _, v := range m {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
