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
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"

	"lab/internal/gitcmd"
)

// storeObjects writes every regular file and symbolic link below dir (but
// .git and .lab-lock) into the repository's object store, split by size
// over one git fast-import per core, each writing one pack, and returns
// each file's index entry (writeIndex): git add deflated the tree's 1.4 GB
// on one core, and then hashed it all again. Not git hash-object -w: it
// writes each of the 86,000 blobs as a file of its own, and creating them
// took most of its time (58 s, 75 s of it in the kernel, against 12 s for
// two packs, here in one hour). fast-import's deltas are off (--depth=0):
// it tries each blob against the one before it in the stream, unrelated
// here, and that doubled its CPU time. A symbolic link's blob is its
// target, as git stores it, not the file it points to.
func storeObjects(ctx context.Context, git *gitcmd.Git, dir string) ([]indexEntry, error) {
	var files []indexEntry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path == filepath.Join(dir, ".git"):
			return filepath.SkipDir
		case !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 || d.Name() == ".lab-lock" && filepath.Dir(path) == dir:
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("no stat data for %s", path)
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, indexEntry{path: rel, mode: gitMode(st.Mode), st: *st})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	// Largest first, each to the lightest share: the shares end together.
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(files[b].st.Size, files[a].st.Size) })
	shares := make([][]*indexEntry, runtime.NumCPU())
	load := make([]int64, len(shares))
	for _, i := range order {
		k := slices.Index(load, slices.Min(load))
		shares[k] = append(shares[k], &files[i])
		load[k] += files[i].st.Size
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, share := range shares {
		if len(share) == 0 {
			continue
		}
		g.Go(func() error { return fastImport(ctx, git, dir, share) })
	}
	return files, g.Wait()
}

// fastImport stores the files at paths (relative to dir) as blobs in one
// pack, not deflated (pack.compression=0): zlib, even at its fastest level,
// was most of the import's CPU (93 against 1,089 MB/s at level 0 for
// drivers/net here; 1.4 GB to store), on the fresh machine's path to its
// first kernel, for a pack a quarter the size. The cache holds the
// extracted tree anyway; the pack adds 1.4 GB instead of 0.4.
func fastImport(ctx context.Context, git *gitcmd.Git, dir string, files []*indexEntry) error {
	err := feedFastImport(ctx, git, []string{"-c", "pack.compression=0", "fast-import", "--quiet", "--depth=0"},
		func(w io.Writer) error { return writeBlobs(w, dir, files) })
	if err != nil {
		return fmt.Errorf("store the files of %s: %w", dir, err)
	}
	return nil
}

// feedFastImport runs git with args (a fast-import) and write on its input.
func feedFastImport(ctx context.Context, git *gitcmd.Git, args []string, write func(io.Writer) error) error {
	cmd := git.Command(ctx, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git fast-import: %w", err)
	}
	werr := write(stdin)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git fast-import: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return werr
}

// writeBlobs writes a fast-import stream of one blob per file, a symbolic
// link's being its target as git stores it, and names each file's blob.
func writeBlobs(w io.Writer, dir string, files []*indexEntry) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, f := range files {
		var data []byte
		var err error
		if f.mode == 0o120000 {
			var target string
			target, err = os.Readlink(filepath.Join(dir, f.path))
			data = []byte(target)
		} else {
			data, err = os.ReadFile(filepath.Join(dir, f.path))
		}
		if err != nil {
			return fmt.Errorf("store %s: %w", f.path, err)
		}
		f.oid = blobID(data)
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

// commitEntries makes the commit of entries (their blobs stored) on the
// branch HEAD names, with one more git fast-import: it writes the ~5,000
// trees into a pack of its own, where git commit wrote each as a file of
// its own (3.9-4.1 s here, on a file system slow to create files, against
// 0.6 s). The commit is the one git commit made of the same index: author
// and committer gitcmd.Identity, the message with its newline.
func commitEntries(ctx context.Context, git *gitcmd.Git, message string, entries []indexEntry) error {
	branch, err := git.Output(ctx, "symbolic-ref", "HEAD")
	if err != nil {
		return err
	}
	return feedFastImport(ctx, git, []string{"fast-import", "--quiet"}, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		fmt.Fprintf(bw, "commit %s\nauthor %s\ncommitter %s\ndata %d\n%s\n", branch, gitcmd.Identity, gitcmd.Identity, len(message)+1, message)
		for _, e := range entries {
			fmt.Fprintf(bw, "M %o %x %s\n", e.mode, e.oid, fastImportPath(e.path))
		}
		return bw.Flush()
	})
}

// fastImportPath is path as fast-import reads it: C-quoted where it must
// be (a leading double quote, a newline), as is otherwise.
func fastImportPath(path string) string {
	if !strings.HasPrefix(path, `"`) && !strings.Contains(path, "\n") {
		return path
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
