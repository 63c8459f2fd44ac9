package source

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"lab/internal/gitcmd"
)

// storeObjects writes every regular file below dir (but .git and
// .lab-lock) into the repository's object store, split by size over one
// git fast-import per core, each writing one pack. git add alone deflates
// the tree's 1.4 GB on one core; after this it finds each object stored
// and only hashes the file again. Not git hash-object -w: it writes each
// of the 86,000 blobs as a file of its own, and creating them took most of
// its time (58 s, 75 s of it in the kernel, against 12 s for two packs,
// here in one hour). fast-import's deltas are off (--depth=0): it tries
// each blob against the one before it in the stream, unrelated here, and
// that doubled its CPU time. Symbolic links are left to git add, which
// stores their target, not the file they point to.
func storeObjects(ctx context.Context, git *gitcmd.Git, dir string) error {
	type file struct {
		path string
		size int64
	}
	var files []file
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path == filepath.Join(dir, ".git"):
			return filepath.SkipDir
		case !d.Type().IsRegular() || d.Name() == ".lab-lock" && filepath.Dir(path) == dir:
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, file{rel, info.Size()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	// Largest first, each to the lightest share: the shares end together.
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(b.size, a.size) })
	shares := make([][]string, runtime.NumCPU())
	load := make([]int64, len(shares))
	for _, f := range files {
		i := slices.Index(load, slices.Min(load))
		shares[i] = append(shares[i], f.path)
		load[i] += f.size
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, share := range shares {
		if len(share) == 0 {
			continue
		}
		g.Go(func() error { return fastImport(ctx, git, dir, share) })
	}
	return g.Wait()
}

// fastImport stores the files at paths (relative to dir) as blobs in one
// pack, deflated at zlib's fastest level (see extract).
func fastImport(ctx context.Context, git *gitcmd.Git, dir string, paths []string) error {
	cmd := git.Command(ctx, "-c", "pack.compression=1", "fast-import", "--quiet", "--depth=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git fast-import in %s: %w", dir, err)
	}
	werr := writeBlobs(stdin, dir, paths)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git fast-import in %s: %w: %s", dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return werr
}

// writeBlobs writes a fast-import stream of one blob per file.
func writeBlobs(w io.Writer, dir string, paths []string) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return fmt.Errorf("store %s: %w", p, err)
		}
		fmt.Fprintf(bw, "blob\ndata %d\n", len(data))
		bw.Write(data)
		if err := bw.WriteByte('\n'); err != nil {
			return fmt.Errorf("git fast-import: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("git fast-import: %w", err)
	}
	return nil
}
