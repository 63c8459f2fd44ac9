package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"lab/internal/flagval"
	"lab/internal/initramfs"
	"lab/internal/run"
	"lab/internal/runfolder"
	"lab/internal/series"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
)

// openSeveral opens every series of lab run --series A --series B ... (a
// run of several series) and names each as its kernel's variant; done
// closes them. Standard input holds one series: "-" is refused, as is a
// series given twice.
func openSeveral(paths []string, stdin io.Reader) (named []run.NamedSeries, done func(), err error) {
	var opened []*series.Series
	closeAll := func() {
		for _, s := range opened {
			s.Close()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	seen := map[string]bool{}
	for _, p := range paths {
		switch {
		case p == "-":
			return nil, nil, usagef("--series -: standard input holds one series; give each of several series as a file or folder")
		case seen[p]:
			return nil, nil, usagef("--series %s given twice: each series of a run is a kernel of its own", p)
		}
		seen[p] = true
		s, err := openSeriesFlag(p, stdin)
		if err != nil {
			return nil, nil, err
		}
		opened = append(opened, s)
	}
	names := severalNames(opened)
	for i, s := range opened {
		v, err := variant.Name(names[i])
		if err != nil {
			return nil, nil, fmt.Errorf("--series %s: %w", paths[i], err)
		}
		named = append(named, run.NamedSeries{Variant: v, Series: s})
	}
	return named, closeAll, nil
}

// severalNames names the series of a run of several: by their versions
// ("v1", "v2": the cover letters' [PATCH v2 0/n]) when those tell them
// apart, else by their names (the file's, made path-safe), else by their
// place ("series1", "series2"). "baseline" is the kernel without any.
func severalNames(list []*series.Series) []string {
	distinct := func(names []string) bool {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] || variant.Variant(n) == variant.Baseline {
				return false
			}
			if _, err := variant.Name(n); err != nil {
				return false
			}
			seen[n] = true
		}
		return true
	}
	var versions, names, places []string
	for i, s := range list {
		versions = append(versions, fmt.Sprintf("v%d", max(s.Version, 1)))
		names = append(names, strings.TrimSuffix(spec.NameFor(s), "."))
		places = append(places, fmt.Sprintf("series%d", i+1))
	}
	for _, c := range [][]string{versions, names} {
		if distinct(c) {
			return c
		}
	}
	return places
}

// severalOptions are runOptions for a run of several series: the lab file
// (whose series they replace) or, without one, the lab spec.Default makes
// from the first series for this host, printed before anything runs.
func severalOptions(inv invocation, fs *flag.FlagSet, labFlags *spec.Flags, runFlags *run.Flags, sers *flagval.Repeated) (opt run.Options, done func(), err error) {
	command := strings.TrimPrefix(fs.Name(), "lab ")
	if command != "run" && command != "build" {
		return opt, nil, usagef("%s takes one --series; several are for lab run and lab build", command)
	}
	if n := len(inv.args); n > 1 {
		return opt, nil, usagef("%s --series takes at most one lab file, got %d", command, n)
	}
	named, done, err := openSeveral(sers.V, inv.stdin)
	if err != nil {
		return opt, nil, err
	}
	defer func() {
		if err != nil {
			done()
		}
	}()
	first := named[0].Series
	var lab *spec.Lab
	given := "--series " + strings.Join(sers.V, " --series ")
	var header string
	if len(inv.args) == 1 {
		lab, err = spec.LoadWith(inv.args[0], first)
		header = fmt.Sprintf("%s with %s", inv.args[0], given)
	} else {
		host := spec.ReadHost()
		host.KVMArch = testbed.KVMArch(runFlags.Accel.V)
		lab, err = spec.Default(spec.NameFor(first), first, host)
		header = fmt.Sprintf("made by lab run %s, for this host (%s)", given, host.ShapeWords())
	}
	if err != nil {
		return opt, nil, err
	}
	if err := labFlags.Apply(lab); err != nil {
		return opt, nil, err
	}
	root, err := initramfs.FindModuleRoot(lab.Root)
	if err != nil {
		return opt, nil, err
	}
	opt = run.Options{Lab: lab, ModuleRoot: root, Command: append([]string{"lab"}, inv.raw...), Out: inv.out, Several: named,
		SaveLab: true, LabHeader: header, RepeatFlags: repeatFlags(fs, inv.raw[1:])}
	if err := runFlags.Apply(&opt, root); err != nil {
		return opt, nil, usageError{err.Error()}
	}
	var lines []string
	for _, n := range named {
		lines = append(lines, fmt.Sprintf("  %s: %s (%s)", n.Variant, seriesWords(n.Series), inputName(n.Series)))
	}
	fmt.Fprintf(inv.out, "lab: %d series, a kernel each against one baseline:\n%s\n", len(named), strings.Join(lines, "\n"))
	if len(inv.args) == 0 {
		// The lab lab made: shown before anything runs, as the run
		// folder will keep it.
		shown := *lab
		shown.Series = ""
		for _, n := range named {
			shown.Versions = append(shown.Versions, spec.Version{Name: string(n.Variant), Series: runfolder.SeriesRefOf(string(n.Variant))})
		}
		text, err := shown.YAML(header)
		if err != nil {
			return opt, nil, err
		}
		fmt.Fprintf(inv.out, "lab: no lab file: this lab, kept in the run folder as %s beside the series' files (%s/):\n%s\n", runfolder.LabFile, runfolder.SeriesRefOf("NAME"), text)
	}
	return opt, done, nil
}

// openVersions opens the series of a lab of several (versions:), each
// named as the lab names it; done closes them. Only lab run measures
// several.
func openVersions(lab *spec.Lab, command string) (named []run.NamedSeries, done func(), err error) {
	if command != "run" && command != "build" {
		return nil, nil, usagef("%s takes one series, and lab %s has %d (versions:): several are for lab run and lab build", command, lab.Name, len(lab.Versions))
	}
	closeAll := func() {
		for _, n := range named {
			n.Series.Close()
		}
	}
	for i, v := range lab.Versions {
		s, err := lab.OpenVersion(i)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: versions: %s: %w", lab.Path, v.Name, err)
		}
		named = append(named, run.NamedSeries{Variant: variant.Variant(v.Name), Series: s})
	}
	return named, closeAll, nil
}
