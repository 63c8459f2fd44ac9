package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"lab/internal/cluster"
	"lab/internal/flagval"
	"lab/internal/initramfs"
	"lab/internal/run"
	"lab/internal/spec"
	"lab/internal/testbed"
)

const planHelp = `lab plan LAB.yaml --shards N [--json | --emit github|k8s|slurm [-o PATH]] [lab run flags]:
the units of a run spread over N hosts, for any engine to run: one build
(lab build: every kernel and initramfs into a cache the hosts share), N boot
shards (lab run --shard K/N --no-build: each boots whole pairs of baseline and
patched, dealt round-robin; the boot numbers are the whole run's), and the
merge (lab merge: one run, every report). --json prints them with each unit's
command line, from which any CI matrix can be made; without it, a table.

--emit writes the ready template for an engine:
  github  a GitHub Actions workflow (build job, a matrix of boot shards that
          upload their run folders as artifacts, a merge job); to -o FILE or stdout
  k8s     Kubernetes objects: a shared volume claim, a build Job, an Indexed
          Job with one pod per shard (K = JOB_COMPLETION_INDEX, /dev/kvm from
          devices.kubevirt.io/kvm) and a merge Job; to -o FILE or stdout
  slurm   batch scripts into -o DIR/scripts (build.sh, boot.sh for an array,
          merge.sh, submit.sh, resubmit.sh); DIR then holds the logs, the
          shards and the merged run. lab submit slurm writes and submits them.
Flags of lab run (--arch, --cpus, --boots, ...) go into every command.

Flags:
`

// planFlags are what lab plan and lab submit share: the lab and run flags
// passed on to every command, and the shard count.
type planFlags struct {
	lab    spec.Flags
	run    run.Flags
	shards flagval.Int
}

func (f *planFlags) register(fs *flag.FlagSet) {
	f.lab.RegisterFlags(fs)
	f.run.RegisterFlags(fs)
	fs.Var(&f.shards, "shards", "N: how many hosts share the boots (required; at most the run's boot pairs)")
}

// request loads the lab with the flags applied and makes the plan's
// request: the lab file as named from lab's checkout, the flags to pass on.
func (f *planFlags) request(fs *flag.FlagSet, labArg string) (cluster.Request, string, error) {
	if !f.shards.IsSet() {
		return cluster.Request{}, "", usagef("--shards N is required")
	}
	if f.run.Shard.IsSet() || f.run.NoBuild.IsSet() {
		return cluster.Request{}, "", usagef("--shard and --no-build are the plan's to set, one per unit")
	}
	lab, err := spec.Load(labArg)
	if err != nil {
		return cluster.Request{}, "", err
	}
	if err := f.lab.Apply(lab); err != nil {
		return cluster.Request{}, "", err
	}
	root, err := initramfs.FindModuleRoot(lab.Root)
	if err != nil {
		return cluster.Request{}, "", err
	}
	var opt run.Options
	if err := f.run.Apply(&opt, root); err != nil {
		return cluster.Request{}, "", usageError{err.Error()}
	}
	req := cluster.Request{Lab: lab, LabFile: labPath(root, labArg), Args: cluster.Args(givenFlags(fs)), Shards: f.shards.V, Only: opt.Only}
	if f.run.Cache.IsSet() {
		req.Cache = absPath(f.run.Cache.V)
	}
	if f.run.Results.IsSet() {
		req.Results = absPath(f.run.Results.V)
	}
	return req, root, nil
}

// givenFlags are the lab and run flags given on the command line.
func givenFlags(fs *flag.FlagSet) []cluster.Flag {
	return givenOf(fs, func(scratch *flag.FlagSet) {
		new(spec.Flags).RegisterFlags(scratch)
		new(run.Flags).RegisterFlags(scratch)
	})
}

// givenOf are the flags given on the command line that register adds.
func givenOf(fs *flag.FlagSet, register func(*flag.FlagSet)) []cluster.Flag {
	scratch := flag.NewFlagSet("", flag.ContinueOnError)
	register(scratch)
	var out []cluster.Flag
	fs.Visit(func(f *flag.Flag) {
		if scratch.Lookup(f.Name) == nil {
			return
		}
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		out = append(out, cluster.Flag{Name: f.Name, Value: f.Value.String(), Bool: ok && b.IsBoolFlag()})
	})
	return out
}

// labPath names the lab file from lab's checkout when it is inside it
// (the jobs run there), or absolutely.
func labPath(root, arg string) string {
	abs := absPath(arg)
	if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return abs
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func planCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f planFlags
	var asJSON flagval.Bool
	var emit, out, image flagval.String
	f.register(fs)
	fs.Var(&asJSON, "json", "print the units as JSON")
	fs.Var(&emit, "emit", "write the template for an engine: github, k8s or slurm")
	fs.Var(&out, "o", "with --emit: the file (github, k8s; default stdout) or folder (slurm, required)")
	fs.Var(&image, "image", "with --emit k8s: the container image (default "+cluster.DefaultImage+")")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), planHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) != 1 {
			return usagef("plan takes one lab file, got %d", len(inv.args))
		}
		if asJSON.V && emit.IsSet() {
			return usagef("--json and --emit: choose one")
		}
		req, root, err := f.request(fs, inv.args[0])
		if err != nil {
			return err
		}
		if emit.IsSet() {
			if emit.V == cluster.EngineK8s {
				if msg := cluster.MissingImage(ctx, cluster.ImageOrDefault(image.V)); msg != "" {
					fmt.Fprintf(inv.errOut, "lab plan: warning: %s\n", msg)
				}
			}
			return emitTemplate(req, root, emit.V, out.V, image.V, inv.out)
		}
		if req.Results == "" {
			req.Results = "results"
		}
		p, err := cluster.Make(req)
		if err != nil {
			return usageError{err.Error()}
		}
		if asJSON.V {
			data, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(inv.out, "%s\n", data)
			return err
		}
		fmt.Fprint(inv.out, planText(p))
		return nil
	}
}

// planText is the plan as a table.
func planText(p *cluster.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d boots in %d pairs over %d shards\n", p.Lab, p.Boots, p.Pairs, p.Shards)
	for _, u := range p.Units {
		what := ""
		if u.Kind == cluster.KindBoot {
			what = fmt.Sprintf("boots %s (%d pair%s)", intsText(u.Boots), u.Pairs, map[bool]string{true: "s"}[u.Pairs != 1])
		}
		fmt.Fprintf(&b, "%-9s %-28s %s\n", u.Name, what, cluster.Line(u.Command))
	}
	return b.String()
}

// emitTemplate writes an engine's template.
func emitTemplate(req cluster.Request, root, engine, out, image string, stdout io.Writer) error {
	var text string
	var err error
	switch engine {
	case cluster.EngineGitHub:
		text, err = cluster.GitHub(req)
	case cluster.EngineK8s:
		text, err = cluster.Kubernetes(req, image)
	case cluster.EngineSlurm:
		return emitSlurm(req, root, out, stdout)
	default:
		return usagef("--emit %q: want github, k8s or slurm", engine)
	}
	if err != nil {
		return usageError{err.Error()}
	}
	if out == "" {
		_, err = io.WriteString(stdout, text)
		return err
	}
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return nil
}

// emitSlurm writes the batch scripts of a submission laid out in dir.
func emitSlurm(req cluster.Request, root, dir string, stdout io.Writer) error {
	if dir == "" {
		return usagef("--emit slurm: -o DIR is required (the scripts go to DIR/scripts; the logs, shards and merged run to DIR)")
	}
	s, err := slurmSubmission(req, root, absPath(dir), "", true)
	if err != nil {
		return err
	}
	scripts, err := s.Scripts()
	if err != nil {
		return usageError{err.Error()}
	}
	paths, err := cluster.WriteScripts(filepath.Join(s.Dir, "scripts"), scripts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\nsubmit with: %s\n", strings.Join(paths, " "), s.Script("submit.sh"))
	return nil
}

// slurmSubmission lays a Slurm submission out: lab's own executable, the
// cache (the default one unless --cache), everything absolute, since the
// jobs run on other nodes.
func slurmSubmission(req cluster.Request, root, dir, partition string, exclusive bool) (cluster.Slurm, error) {
	exe, err := os.Executable()
	if err != nil {
		return cluster.Slurm{}, fmt.Errorf("lab's own path, for the jobs: %w", err)
	}
	req.Exe = exe
	if req.Cache == "" {
		req.Cache = absPath(testbed.DefaultCache())
	}
	return cluster.NewSlurm(req, root, dir, partition, exclusive), nil
}

func intsText(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
