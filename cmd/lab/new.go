package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lab/internal/flagval"
	"lab/internal/gitcmd"
	"lab/internal/report"
	"lab/internal/series"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
)

// newCommand keeps a series as a lab of lab's checkout: labs/NAME.yaml,
// the lab lab run --series would make (series: NAME, mode: auto) with a
// comment saying where it came from, and patches/NAME/, a file a patch
// and the cover letter as 0000-cover-letter.patch (which applying skips).
// It overwrites nothing, and on an error leaves nothing behind.
func newCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var ser flagval.String
	fs.Var(&ser, "series", "the series to keep: a series folder, an mbox (b4 am's .mbx, with its .cover beside it), one mail, a diff, or - for standard input")
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) != 1 {
			return usagef("new takes one name (lab new NAME --series PATH), got %d", len(inv.args))
		}
		if !ser.IsSet() {
			return usagef("new %s: --series PATH is the series to keep", inv.args[0])
		}
		name := inv.args[0]
		s, err := series.Open(ser.V, inv.stdin, "")
		if err != nil {
			return err
		}
		defer s.Close()
		host := spec.ReadHost()
		host.KVMArch = testbed.KVMArch("")
		lab, err := spec.Default(name, s, host)
		if err != nil {
			return err
		}
		labFile := filepath.Join(lab.Root, "labs", name+".yaml")
		dir := filepath.Join(lab.Root, "patches", name)
		for _, p := range []string{labFile, dir} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s exists: lab new overwrites nothing; give another name, or remove it first", rel(p))
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		lab.Series = name
		header := fmt.Sprintf("%s: %s\n"+
			"Kept by lab new from %s (sha256 %s) on %s: the patches are in patches/%s/%s.\n"+
			"mode auto: lab tries the series forward and in reverse on the source, and says which it ran and why.\n"+
			"The matrix is this host's shape (%s): edit it for another host, and add the series' claims (see labs/uprobe-lazy-buffer.yaml).",
			name, seriesWords(s), inputName(s), gitcmd.Short(s.InputSHA256), time.Now().UTC().Format("2006-01-02"), name, coverWords(s), host.ShapeWords())
		if lab.BaseNote != "" {
			header += "\nbase: " + lab.BaseNote + "."
		}
		text, err := lab.YAML(header)
		if err != nil {
			return err
		}
		if _, err := series.Open(s.Dir, nil, dir); err != nil {
			return err
		}
		if err := writeNew(labFile, text); err != nil {
			os.RemoveAll(dir)
			return err
		}
		if _, err := spec.Load(labFile); err != nil {
			os.Remove(labFile)
			os.RemoveAll(dir)
			return fmt.Errorf("the lab lab new wrote does not read back (a bug in lab): %w", err)
		}
		fmt.Fprintf(inv.out, "wrote %s and %s/ (%s%s)\nrun it: lab run %s\n", rel(labFile), rel(dir), patchCount(len(s.Patches)), coverWords(s), rel(labFile))
		return nil
	}
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// rel is p from the working folder when it is below it, else p.
func rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func patchCount(n int) string {
	if n == 1 {
		return "1 patch"
	}
	return fmt.Sprintf("%d patches", n)
}

// coverWords says where the cover letter went, "" when there is none.
func coverWords(s *series.Series) string {
	if s.Cover == nil {
		return ""
	}
	return ", the cover letter as 0000-cover-letter.patch, which applying skips"
}

// seriesWords names the series as a report does (report.SeriesTitle).
func seriesWords(s *series.Series) string {
	return report.SeriesTitle(testbed.RecordSeries(s, source.Resolution{}))
}

func inputName(s *series.Series) string {
	if s.Input == "-" {
		return "standard input"
	}
	return s.Input
}

// repeatFlags are the flags of a command line (args, after the command's
// name) that repeat a run from the lab.yaml it saved: all but --series,
// the lab file and the lab's own flags (spec.Flags), which lab.yaml holds.
func repeatFlags(fs *flag.FlagSet, args []string) []string {
	labOnly := flag.NewFlagSet("", flag.ContinueOnError)
	new(spec.Flags).RegisterFlags(labOnly)
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue // the lab file
		}
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		drop := name == "series" || labOnly.Lookup(name) != nil
		if !drop {
			out = append(out, a)
		}
		if f := fs.Lookup(name); f != nil && !inline && !isBoolFlag(f) && i+1 < len(args) {
			i++
			if !drop {
				out = append(out, args[i])
			}
		}
	}
	return out
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
