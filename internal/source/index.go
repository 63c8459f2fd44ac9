package source

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"syscall"
)

// indexEntry is what git's index records of one file of the import: its
// path, its blob and the stat data by which git later tells it unchanged
// without reading it.
type indexEntry struct {
	path string
	mode uint32 // 0100644, 0100755 or 0120000
	oid  [sha1.Size]byte
	st   syscall.Stat_t
}

// blobID is git's object name of a blob of data: the SHA-1 of its header
// and content.
func blobID(data []byte) [sha1.Size]byte {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	var id [sha1.Size]byte
	h.Sum(id[:0])
	return id
}

// gitMode is the mode git records for a file of mode m (a symbolic link,
// or a regular file executable by its owner or not).
func gitMode(m uint32) uint32 {
	switch {
	case m&syscall.S_IFMT == syscall.S_IFLNK:
		return 0o120000
	case m&0o100 != 0:
		return 0o100755
	}
	return 0o100644
}

// writeIndex writes entries as the repository's index (format version 2,
// gitformat-index(5)), as git add would have: the import knows every
// file's blob, hashed while it was stored, and git add hashed the whole
// tree again on one core (5 s of the fresh machine's path to its first
// kernel here, after everything else of the import had ended beside the
// configure). Each entry carries the file's stat data, so that git sees the
// work tree unchanged without reading it, as after git add.
func writeIndex(path string, entries []indexEntry) error {
	slices.SortFunc(entries, func(a, b indexEntry) int { return cmp.Compare(a.path, b.path) })
	var buf bytes.Buffer
	be := binary.BigEndian
	head := make([]byte, 12)
	copy(head, "DIRC")
	be.PutUint32(head[4:], 2)
	be.PutUint32(head[8:], uint32(len(entries)))
	buf.Write(head)
	var fixed [62]byte
	var pad [8]byte
	for _, e := range entries {
		for i, v := range [...]uint32{
			uint32(e.st.Ctim.Sec), uint32(e.st.Ctim.Nsec), uint32(e.st.Mtim.Sec), uint32(e.st.Mtim.Nsec),
			uint32(e.st.Dev), uint32(e.st.Ino), e.mode, e.st.Uid, e.st.Gid, uint32(e.st.Size),
		} {
			be.PutUint32(fixed[4*i:], v)
		}
		copy(fixed[40:], e.oid[:])
		be.PutUint16(fixed[60:], uint16(min(len(e.path), 0xfff)))
		buf.Write(fixed[:])
		buf.WriteString(e.path)
		// NUL padding to a multiple of 8 bytes, at least one.
		buf.Write(pad[:8-(62+len(e.path))%8])
	}
	sum := sha1.Sum(buf.Bytes())
	buf.Write(sum[:])
	// git's own way: a lock file renamed over the index.
	tmp := path + ".lock"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write git's index: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write git's index: %w", err)
	}
	return nil
}
