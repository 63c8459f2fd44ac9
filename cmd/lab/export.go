package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lab/internal/flagval"
	"lab/internal/initramfs"
	"lab/internal/publicpath"
	"lab/internal/testbed"
)

// nameFlag is a repeated --as FOLDER=NAME.
type nameFlag [][2]string

func (n *nameFlag) String() string { return fmt.Sprint(*n) }

func (n *nameFlag) Set(v string) error {
	folder, name, ok := strings.Cut(v, "=")
	if !ok || !filepath.IsAbs(folder) || name == "" {
		return fmt.Errorf("--as %q: want /ABSOLUTE/FOLDER=NAME", v)
	}
	*n = append(*n, [2]string{folder, name})
	return nil
}

// exportCommand copies a saved run folder to publish or commit it, every
// folder of this machine named as a reader can place it.
func exportCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var cache flagval.String
	var as nameFlag
	cache.V = testbed.DefaultCache()
	fs.Var(&cache, "cache", "the cache the run used, named $LAB_CACHE")
	fs.Var(&as, "as", "FOLDER=NAME: name another folder of this machine so (repeatable), e.g. --as /scratch/runs=results")
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) != 2 {
			return usagef("export takes a run directory and the folder to make, got %d arguments", len(inv.args))
		}
		src, dst := inv.args[0], inv.args[1]
		if _, err := loadRun(src); err != nil {
			return err
		}
		abs, err := filepath.Abs(src)
		if err != nil {
			return err
		}
		var n publicpath.Names
		for _, a := range as {
			n.Whole(a[0], a[1])
		}
		// results/<lab>/<run-id>: the results folder is named results.
		n.Folder(filepath.Dir(filepath.Dir(abs)), "results")
		n.Folder(cache.V, "$LAB_CACHE")
		if root, err := initramfs.FindModuleRoot(""); err == nil {
			n.Whole(root, ".") // QEMU names it bare: path=/…/lab,
		}
		if home, err := os.UserHomeDir(); err == nil {
			n.Folder(home, "~")
		}
		n.Folder(os.TempDir(), "$TMPDIR")
		if err := publicpath.Copy(src, dst, n.Replacer()); err != nil {
			return fmt.Errorf("export %s: %w", src, err)
		}
		left, err := machinePaths(dst)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			fmt.Fprintf(inv.errOut, "lab: warning: %s still names folders of this machine (name them with --as FOLDER=NAME):\n  %s\n", dst, strings.Join(left, "\n  "))
		}
		fmt.Fprintf(inv.out, "exported %s to %s\n", src, dst)
		return nil
	}
}

// machinePaths lists, file by file, the machine paths left under dir.
func machinePaths(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, p := range publicpath.Find(data) {
			out = append(out, path+": "+p)
		}
		return nil
	})
	return out, err
}
