package inbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"lab/internal/gitcmd"
)

// readPublicInbox reads each epoch's commits after the cursor's, oldest
// epoch first. An epoch the cursor does not know is new (read whole); one
// whose history no longer holds the cursor's commit was rewritten (lore
// does so to remove spam): it is read again from its start and the caller
// is told, so that it answers nothing twice (it knows what it saw by
// Message-ID, not by place).
func (a *Archive) readPublicInbox(ctx context.Context, cur Cursor, each func(Mail) error) (Cursor, []Note, error) {
	next := Cursor{Epochs: maps.Clone(cur.Epochs)}
	if next.Epochs == nil {
		next.Epochs = map[int]string{}
	}
	var notes []Note
	list := epochs(a.Path)
	for _, e := range slices.Sorted(maps.Keys(cur.Epochs)) {
		if !slices.Contains(list, e) {
			notes = append(notes, Note{Text: fmt.Sprintf("epoch %d (git/%d.git) is gone from the inbox", e, e)})
			delete(next.Epochs, e)
		}
	}
	known := slices.Sorted(maps.Keys(cur.Epochs))
	for _, e := range list {
		g := &gitcmd.Git{Dir: filepath.Join(a.Path, "git", strconv.Itoa(e)+".git")}
		head, err := g.Output(ctx, "rev-parse", "-q", "--verify", "HEAD^{commit}")
		if err != nil {
			if ctx.Err() != nil {
				return next, notes, ctx.Err()
			}
			continue // an epoch made but not yet written to
		}
		from := cur.Epochs[e]
		switch {
		case from == "" && len(known) > 0 && e > known[len(known)-1]:
			notes = append(notes, Note{Text: fmt.Sprintf("new epoch %d (git/%d.git)", e, e)})
		case from != "" && from != head && !isAncestor(ctx, g, from, head):
			if ctx.Err() != nil {
				return next, notes, ctx.Err()
			}
			notes = append(notes, Note{Rewritten: true, Text: fmt.Sprintf(
				"epoch %d (git/%d.git) was rewritten: commit %s, where the last read ended, is no longer in its history; its mails are read again from its start, and mails seen before are not answered again",
				e, e, gitcmd.Short(from))})
			from = ""
		}
		if from == head {
			continue
		}
		last, err := readEpoch(ctx, g, fmt.Sprintf("git/%d.git", e), from, head, each)
		if last != "" {
			next.Epochs[e] = last
		}
		if err != nil {
			return next, notes, err
		}
	}
	return next, notes, nil
}

// isAncestor reports whether commit is in head's history.
func isAncestor(ctx context.Context, g *gitcmd.Git, commit, head string) bool {
	return g.Command(ctx, "merge-base", "--is-ancestor", commit, head).Run() == nil
}

// message is one commit of an epoch: the blob of its m (a mail) or d (a
// removal).
type message struct {
	commit, blob string
	removed      bool
}

// readEpoch calls each for the commits from (exclusive; "" for the
// epoch's first) to head, and returns the last commit it got through.
func readEpoch(ctx context.Context, g *gitcmd.Git, name, from, head string, each func(Mail) error) (string, error) {
	rng := head
	if from != "" {
		rng = from + ".." + head
	}
	out, err := g.Run(ctx, "log", "--reverse", "--root", "--raw", "--no-abbrev", "--no-renames", "--format=%x00%H", rng)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	msgs := parseLog(out)
	blobs, err := newBlobReader(ctx, g)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	defer blobs.close()
	last := ""
	for _, m := range msgs {
		if m.blob != "" {
			raw, err := blobs.read(m.blob)
			if err != nil {
				return last, fmt.Errorf("read %s commit %s: %w", name, gitcmd.Short(m.commit), err)
			}
			// public-inbox-purge leaves a purged mail's commit with an
			// empty m: nothing to read.
			if len(raw) == 0 {
				last = m.commit
				continue
			}
			if err := each(Mail{Where: name + " " + gitcmd.Short(m.commit), Raw: raw, Removed: m.removed}); err != nil {
				return last, err
			}
		}
		last = m.commit
	}
	return last, nil
}

// parseLog reads git log --raw --format=%x00%H: each commit's id, then
// its changed files. A v2 commit's tree holds one file, m (a mail added)
// or d (a mail removed, the file being that mail).
func parseLog(out string) []message {
	var msgs []message
	for _, rec := range strings.Split(out, "\x00")[1:] {
		lines := strings.Split(strings.TrimSpace(rec), "\n")
		m := message{commit: strings.TrimSpace(lines[0])}
		for _, l := range lines[1:] {
			meta, path, ok := strings.Cut(l, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) < 5 || !strings.HasPrefix(f[0], ":") || f[4] == "D" {
				continue
			}
			switch path {
			case "m":
				m.blob, m.removed = f[3], false
			case "d":
				m.blob, m.removed = f[3], true
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// blobReader reads blobs through one git cat-file --batch.
type blobReader struct {
	in   io.WriteCloser
	out  *bufio.Reader
	wait func() error
}

func newBlobReader(ctx context.Context, g *gitcmd.Git) (*blobReader, error) {
	cmd := g.Command(ctx, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &blobReader{in: in, out: bufio.NewReaderSize(out, 1<<16), wait: cmd.Wait}, nil
}

func (b *blobReader) read(oid string) ([]byte, error) {
	if _, err := io.WriteString(b.in, oid+"\n"); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	header, err := b.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	f := strings.Fields(header)
	if len(f) != 3 || f[1] != "blob" {
		return nil, fmt.Errorf("blob %s: git cat-file says %q", oid, strings.TrimSpace(header))
	}
	size, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, fmt.Errorf("blob %s: size %q", oid, f[2])
	}
	data := make([]byte, size+1) // and the newline after it
	if _, err := io.ReadFull(b.out, data); err != nil {
		return nil, fmt.Errorf("blob %s: %w", oid, err)
	}
	return data[:size:size], nil
}

func (b *blobReader) close() {
	b.in.Close()
	b.wait()
}
