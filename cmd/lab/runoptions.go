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
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/variant"
)

// runOptions makes the options of lab run and lab build: the lab file with
// the flags applied (its series, or the --series given, one or several),
// or, with --series and no lab file, the lab made for the series and this
// host (spec.Default). The series are opened (and checked) first, before
// anything is written; done closes them once the run is over.
func runOptions(inv invocation, fs *flag.FlagSet, labFlags *spec.Flags, runFlags *run.Flags, sers *flagval.Repeated) (opt run.Options, done func(), err error) {
	command := strings.TrimPrefix(fs.Name(), "lab ")
	switch n := len(inv.args); {
	case sers.IsSet() && n > 1:
		return opt, nil, usagef("%s --series takes at most one lab file, got %d", command, n)
	case !sers.IsSet() && n != 1:
		return opt, nil, usagef("%s takes one lab file, got %d (or --series PATH, and a lab file or none)", command, n)
	case len(sers.V) > 1 && command != "run" && command != "build":
		return opt, nil, usagef("%s takes one --series; several are for lab run and lab build", command)
	}
	named, closeGiven, err := openGiven(sers.V, inv.stdin)
	if err != nil {
		return opt, nil, err
	}
	// The returns below set done to nil on an error: close what was
	// opened by its own name.
	done = closeGiven
	defer func() {
		if err != nil {
			closeGiven()
		}
	}()
	lab, header, err := loadLab(inv.args, command, sers.V, named, runFlags.Accel.V)
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
	opt = run.Options{Lab: lab, ModuleRoot: root, Command: append([]string{"lab"}, inv.raw...), Out: inv.out, Series: named}
	if len(named) == 0 && len(lab.Versions) > 0 {
		// A lab of several series (versions:): opened as --series A
		// --series B opens them.
		var closeVersions func()
		if opt.Series, closeVersions, err = openVersions(lab, command); err != nil {
			return opt, nil, err
		}
		done = closeVersions
		defer func() {
			if err != nil {
				closeVersions()
			}
		}()
	}
	if len(named) > 0 {
		opt.SaveLab, opt.LabHeader, opt.RepeatFlags = true, header, repeatFlags(fs, inv.raw[1:])
	}
	if err := runFlags.Apply(&opt, root); err != nil {
		return opt, nil, usageError{err.Error()}
	}
	return opt, done, showGiven(inv, lab, header, named)
}

// openGiven opens the series of --series: none, one (standard input too),
// or several, each named as its kernel (openSeriesList).
func openGiven(paths []string, stdin io.Reader) ([]run.NamedSeries, func(), error) {
	switch len(paths) {
	case 0:
		return nil, func() {}, nil
	case 1:
		s, err := openSeriesFlag(paths[0], stdin)
		if err != nil {
			return nil, nil, err
		}
		return []run.NamedSeries{{Variant: variant.Patched, Series: s}}, func() { s.Close() }, nil
	}
	return openSeriesList(paths, stdin)
}

// loadLab is the run's lab: the lab file, the lab file with the series of
// --series (the first of several stands for them in what the lab file
// names), or (no lab file) the lab made for the series and this host, with
// the header line that says where it came from.
func loadLab(args []string, command string, given []string, named []run.NamedSeries, accel string) (*spec.Lab, string, error) {
	if len(named) == 0 {
		lab, err := spec.Load(args[0])
		return lab, "", err
	}
	first := named[0].Series
	flags := "--series " + strings.Join(given, " --series ")
	what := seriesWords(first)
	if len(named) > 1 {
		what = fmt.Sprintf("%d series", len(named))
	}
	if len(args) == 1 {
		lab, err := spec.LoadWith(args[0], first)
		return lab, fmt.Sprintf("%s with %s: %s", args[0], flags, what), err
	}
	host := spec.ReadHost()
	host.KVMArch = testbed.KVMArch(accel)
	lab, err := spec.Default(spec.NameFor(first), first, host)
	return lab, fmt.Sprintf("made by lab %s %s, for this host (%s), from %s", command, flags, host.ShapeWords(), what), err
}

// showGiven says, before anything runs, which series the run takes (each
// kernel of several), and the lab lab made when there is no lab file, as
// the run folder will keep it.
func showGiven(inv invocation, lab *spec.Lab, header string, named []run.NamedSeries) error {
	if len(named) > 1 {
		var lines []string
		for _, n := range named {
			lines = append(lines, fmt.Sprintf("  %s: %s (%s)", n.Variant, seriesWords(n.Series), inputName(n.Series)))
		}
		fmt.Fprintf(inv.out, "lab: %d series, a kernel each against one baseline:\n%s\n", len(named), strings.Join(lines, "\n"))
	}
	if len(named) == 0 || len(inv.args) > 0 {
		return nil
	}
	shown := *lab
	shown.Series = runfolder.SeriesRef
	where := runfolder.SeriesDir
	if len(named) > 1 {
		shown.Series, where = "", runfolder.SeriesRefOf("NAME")
		for _, n := range named {
			shown.Versions = append(shown.Versions, spec.Version{Name: string(n.Variant), Series: runfolder.SeriesRefOf(string(n.Variant))})
		}
	}
	text, err := shown.YAML(header)
	if err != nil {
		return err
	}
	fmt.Fprintf(inv.out, "lab: no lab file: this lab, kept in the run folder as %s beside the series' files (%s/):\n%s\n", runfolder.LabFile, where, text)
	return nil
}
