// Package cluster spreads a lab run over the machines of an engine users
// already have: it plans the units of a run (one build, then N shards of
// boot pairs, then a merge), writes them as a GitHub Actions workflow, a
// Kubernetes Indexed Job or a set of Slurm batch scripts, and submits the
// Slurm set with sbatch. It schedules nothing itself: the engine does.
package cluster

import (
	"fmt"
	"slices"
	"strings"

	"lab/internal/shard"
	"lab/internal/spec"
	"lab/internal/variant"
)

// Unit kinds, in the order a run needs them.
const (
	KindBuild = "build"
	KindBoot  = "boot"
	KindMerge = "merge"
)

// Request is what a plan is made of.
type Request struct {
	// Lab is the lab file with the command line's flags applied; LabFile
	// is the path the commands name it by.
	Lab     *spec.Lab
	LabFile string
	// Args are the lab and run flags to pass on to lab build and every lab
	// run, as --name=value (see Args).
	Args []string
	// Shards is N: how many hosts share the boots.
	Shards int
	// Results is the folder the run's pieces go to (see Layout); Cache the
	// shared kernel cache ("": each command's default).
	Results, Cache string
	// Exe is how the commands call lab ("lab", "./lab", an absolute path).
	Exe string
	// Only is --only: one variant ("" for both).
	Only variant.Variant
}

// Layout is where a run's pieces go under its results folder: the build
// record, the shards' run folders (all under one folder: their run ids name
// the shard) and the merged run.
type Layout struct {
	Build  string `json:"build"`
	Shards string `json:"shards"`
	Merged string `json:"merged"`
}

// LayoutOf is the layout under results.
func LayoutOf(results string) Layout {
	return Layout{Build: results, Shards: join(results, "shards"), Merged: join(results, "merged")}
}

// join joins with a slash and cleans nothing, so that templates such as
// "/results/$LAB_RUN" stay as written.
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// ShardGlob is the pattern lab merge expands to find the shards' run
// folders.
func (l Layout) ShardGlob(lab string) string { return join(join(l.Shards, lab), "*") }

// Unit is one job of a run.
type Unit struct {
	Name  string `json:"name"` // build, shard-K, merge
	Kind  string `json:"kind"`
	Shard string `json:"shard,omitempty"` // K/N
	// Boots are the boot numbers (1-based, numbered as in the whole run)
	// this shard makes; Pairs how many baseline/patched pairs they are.
	Boots   []int    `json:"boots,omitempty"`
	Pairs   int      `json:"pairs,omitempty"`
	Needs   []string `json:"needs,omitempty"`
	Command []string `json:"command"`
}

// Plan is a run cut into units: the build, N boot shards, the merge.
type Plan struct {
	Lab     string   `json:"lab"`
	LabFile string   `json:"lab_file"`
	Shards  int      `json:"shards"`
	Boots   int      `json:"boots"` // in the whole run
	Pairs   int      `json:"pairs"`
	Layout  Layout   `json:"layout"`
	Args    []string `json:"args,omitempty"`
	Units   []Unit   `json:"units"`
}

// Unit returns the plan's unit of that name.
func (p *Plan) Unit(name string) (Unit, bool) {
	for _, u := range p.Units {
		if u.Name == name {
			return u, true
		}
	}
	return Unit{}, false
}

// Make plans the run: it deals the boot pairs to the shards exactly as lab
// run --shard K/N will, so the boot numbers are the ones the shards record.
func Make(req Request) (*Plan, error) {
	if req.Shards < 1 {
		return nil, fmt.Errorf("--shards %d: want 1 or more", req.Shards)
	}
	boots, err := shard.ShardBoots(req.Lab.Matrix)
	if err != nil {
		return nil, err
	}
	shards, pairs := shard.Deal(boots, variants(req.Only), req.Shards)
	if req.Shards > pairs {
		return nil, fmt.Errorf("--shards %d: %s has %d boot pairs, so at most %d shards (a shard boots whole pairs)", req.Shards, req.Lab.Name, pairs, pairs)
	}
	lay := LayoutOf(req.Results)
	p := &Plan{Lab: req.Lab.Name, LabFile: req.LabFile, Shards: req.Shards, Pairs: pairs, Layout: lay, Args: req.Args}
	p.Units = append(p.Units, Unit{Name: KindBuild, Kind: KindBuild, Command: req.BuildCommand()})
	var needs []string
	for k, boots := range shards {
		name := fmt.Sprintf("shard-%d", k)
		needs = append(needs, name)
		p.Boots += len(boots)
		p.Units = append(p.Units, Unit{
			Name: name, Kind: KindBoot, Shard: fmt.Sprintf("%d/%d", k, req.Shards), Boots: boots,
			Pairs: pairsIn(boots, len(variants(req.Only))), Needs: []string{KindBuild},
			Command: req.BootCommand(fmt.Sprintf("%d/%d", k, req.Shards)),
		})
	}
	p.Units = append(p.Units, Unit{Name: KindMerge, Kind: KindMerge, Needs: needs, Command: req.MergeCommand()})
	return p, nil
}

func pairsIn(boots []int, perPair int) int { return len(boots) / max(perPair, 1) }

func variants(only variant.Variant) []variant.Variant {
	if only != "" {
		return []variant.Variant{only}
	}
	return variant.Both
}

// BuildCommand is lab build with the run's flags.
func (r Request) BuildCommand() []string {
	cmd := []string{r.exe(), "build", r.LabFile}
	cmd = append(cmd, r.Args...)
	return append(cmd, r.placement(LayoutOf(r.Results).Build)...)
}

// BootCommand is lab run of one shard, from the cache alone; shard is K/N
// or a template of it ("$SLURM_ARRAY_TASK_ID/4").
func (r Request) BootCommand(shard string) []string {
	cmd := []string{r.exe(), "run", r.LabFile, "--shard", shard, "--no-build"}
	cmd = append(cmd, r.Args...)
	return append(cmd, r.placement(LayoutOf(r.Results).Shards)...)
}

// MergeCommand is lab merge of every shard folder (lab merge expands the
// pattern itself, so no shell is needed).
func (r Request) MergeCommand() []string {
	lay := LayoutOf(r.Results)
	return []string{r.exe(), "merge", lay.ShardGlob(r.Lab.Name), "-o", lay.Merged}
}

func (r Request) placement(results string) []string {
	var out []string
	if r.Cache != "" {
		out = append(out, "--cache", r.Cache)
	}
	return append(out, "--results", results)
}

func (r Request) exe() string {
	if r.Exe == "" {
		return "lab"
	}
	return r.Exe
}

// Passed are the flags of lab run that a plan passes on to its build and
// boot commands; the plan sets --shard, --no-build, --cache and --results
// itself.
func Passed(name string) bool {
	return !slices.Contains([]string{"shard", "no-build", "cache", "results"}, name)
}

// Flag is one flag given on the command line.
type Flag struct {
	Name, Value string
	Bool        bool // a boolean flag: --name alone means true
}

// Args writes flags as --name=value (--name for a true boolean), in the
// order given, dropping those Passed refuses.
func Args(flags []Flag) []string {
	var out []string
	for _, f := range flags {
		if !Passed(f.Name) {
			continue
		}
		if f.Bool && f.Value == "true" {
			out = append(out, "--"+f.Name)
			continue
		}
		out = append(out, "--"+f.Name+"="+f.Value)
	}
	return out
}
