package kbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"lab/internal/proc"
)

// builtRecord, in a build folder, says which source content its last
// successful build was of. It is removed before every build, so that a
// folder left mid-build (a failure, lab killed) is never a seed.
const builtRecord = ".lab-built.json"

type built struct {
	Src  string `json:"src"`  // the source work tree the folder was built from
	Tree string `json:"tree"` // git tree hash of that build's source
	// Out is the folder's own path then: tools/ (objtool's build) records
	// its objects by absolute path, and a path that changed would relink
	// objtool, which every object depends on.
	Out string `json:"out"`
}

// maxSeedDiff is the share of files in which a seed's source may differ
// from the tree to build: beyond it (another kernel version) the copy buys
// little over a cold build.
const maxSeedDiff = 0.05

// seedLockWait bounds the wait for a seed folder another lab is building
// in (a build holds it for minutes at most); a cold build is the fallback.
const seedLockWait = 15 * time.Minute

// seed fills the new build folder out with a copy of the build folder of
// another source tree built with the same arch and fragments (a user's git
// tree beside the Debian tarball's, a second checkout of the same kernel),
// so that the first build of a tree lab has built before in another place
// is incremental: the copy's paths are moved to this source tree, and the
// files in which the two sources differ are made newer than every object,
// so make rebuilds what depends on them and nothing else, as it does after
// a checkout. Kbuild's dependency files make that exact: a file deleted
// since is a prerequisite with an empty rule, which remakes its users.
// It returns what it seeded from, or "" when there is no usable seed.
func (b *Builder) seed(ctx context.Context, in Inputs, out string) (string, error) {
	cands, _ := filepath.Glob(filepath.Join(b.CacheDir, "build", "*", filepath.Base(out)))
	if len(cands) == 0 {
		return "", nil // a first build of this arch and fragments anywhere
	}
	want, err := lsTree(ctx, b.SrcDir, in.Tree)
	if err != nil {
		return "", err
	}
	// Each candidate is read under its lock: a build there (another lab's,
	// another test's incremental one) removes its record until it ends, and
	// a folder read mid-build was passed over, so that a tree with a good
	// seed was built cold (1,047 s in one suite here, against a minute).
	// A folder being seeded does not exist yet, and a build holds no other
	// folder's lock: the wait cannot close a circle.
	var best string
	var bestRec built
	var bestDiff []string
	unlockBest := func() {}
	defer func() { unlockBest() }()
	for _, c := range cands {
		if c == out {
			continue
		}
		unlock, err := lockFolder(ctx, c, syscall.LOCK_SH, seedLockWait)
		if err != nil {
			return "", err
		}
		if unlock == nil {
			continue // busy for longer than a build takes
		}
		var rec built
		data, err := os.ReadFile(filepath.Join(c, builtRecord))
		if err != nil || json.Unmarshal(data, &rec) != nil || rec.Src == "" || rec.Out == "" || rec.Src == b.SrcDir {
			unlock()
			continue
		}
		have, err := lsTree(ctx, rec.Src, rec.Tree)
		if err != nil {
			unlock()
			continue // its source is gone or rewritten
		}
		diff := differing(want, have)
		if float64(len(diff)) > maxSeedDiff*float64(len(want)) || (best != "" && len(diff) >= len(bestDiff)) {
			unlock()
			continue
		}
		unlockBest()
		best, bestRec, bestDiff, unlockBest = c, rec, diff, unlock
	}
	if best == "" {
		return "", nil
	}
	tmp := out + ".seeding"
	os.RemoveAll(tmp)
	if out, err := proc.Command(ctx, "cp", "-a", "--reflink=auto", best, tmp).CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("copy build folder %s: %w: %s", best, err, bytes.TrimSpace(out))
	}
	unlockBest()
	if err := b.adopt(tmp, out, bestRec, bestDiff); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("seed build folder from %s: %w", best, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return fmt.Sprintf("%s (%d files differ)", best, len(bestDiff)), nil
}

// adopt makes the copied build folder dir, to be renamed out, this source
// tree's: paths of the seed's source and folder become b.SrcDir's and
// out's, every file gets one mtime, and the source files that differ from
// the seed's get a later one.
func (b *Builder) adopt(dir, out string, seed built, diff []string) error {
	for _, f := range []string{builtRecord, ".lab-make.pgid"} {
		os.Remove(filepath.Join(dir, f))
	}
	moves := []move{{[]byte(seed.Src), []byte(b.SrcDir)}, {[]byte(seed.Out), []byte(out)}}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			// O= builds link "source" to the source tree.
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if moved := moveAll([]byte(target), moves); string(moved) != target {
				os.Remove(path)
				if err := os.Symlink(string(moved), path); err != nil {
					return err
				}
			}
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		files = append(files, path)
		return rewrite(path, moves)
	})
	if err != nil {
		return err
	}
	stamp := time.Now()
	for _, f := range files {
		if err := os.Chtimes(f, stamp, stamp); err != nil {
			return err
		}
	}
	// Changed sources must be strictly newer than every object, whatever
	// the file system's timestamp granularity.
	for {
		now := time.Now()
		if now.Truncate(time.Second).After(stamp) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	now := time.Now()
	for _, p := range diff {
		path := filepath.Join(b.SrcDir, p)
		if err := os.Chtimes(path, now, now); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// move is a path that changed: from the seed's to this build's.
type move struct{ from, to []byte }

func moveAll(data []byte, moves []move) []byte {
	for _, m := range moves {
		data = bytes.ReplaceAll(data, m.from, m.to)
	}
	return data
}

// rewrite moves the paths in a text file (kbuild's .cmd and .d files, its
// Makefile); binary files (objects, images) are left alone.
func rewrite(path string, moves []move) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil
	}
	moved := moveAll(data, moves)
	if bytes.Equal(moved, data) {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, moved, fi.Mode().Perm())
}

// lsTree lists the files of tree in the git work tree src: path → mode and
// blob. Blob hashes name content, so two repositories' lists compare.
func lsTree(ctx context.Context, src, tree string) (map[string]string, error) {
	out, err := proc.Command(ctx, "git", "-C", src, "ls-tree", "-r", "-z", tree).Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-tree %s in %s: %w", tree, src, err)
	}
	files := map[string]string{}
	for _, ent := range bytes.Split(out, []byte{0}) {
		meta, path, ok := bytes.Cut(ent, []byte{'\t'})
		if ok {
			files[string(path)] = string(meta)
		}
	}
	return files, nil
}

// differing lists the paths of want that have is missing or holds
// otherwise, and those have holds that want lacks.
func differing(want, have map[string]string) []string {
	var diff []string
	for p, m := range want {
		if have[p] != m {
			diff = append(diff, p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			diff = append(diff, p)
		}
	}
	return diff
}

// lockFolder locks the build folder dir (a file beside it): a build holds
// it exclusively while it writes there, a seed shared while it copies.
// With wait 0 it waits as long as it takes; otherwise it gives up after
// wait and returns nil, nil.
func lockFolder(ctx context.Context, dir string, how int, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock build folder %s: %w", dir, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock build folder %s: %w", dir, err)
		}
		if wait > 0 && time.Now().After(deadline) {
			f.Close()
			return nil, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }, nil
}
