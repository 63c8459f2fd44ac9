package nested

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RehearseFlag makes the program rehearse the outer guest's mounts (see
// Rehearse). Its parent starts it in a mount namespace of its own.
const RehearseFlag = "-rehearse-outer-guest"

// Rehearse does on the host, in a private mount namespace, what the outer
// guest does before its steps: the kernel's mounts, then init's, with the
// host's folders bound where the guest mounts its 9p shares, and a tmpfs
// standing for devtmpfs; then it checks every need, and runs the steps that
// need no KVM (lab plan: the inner lab's file read as the inner run reads
// it) when the guest's root is the host's. It boots nothing, in well under a
// second, and fails as the guest would when a mount hides what a step
// needs. root is the host folder that is the guest's root.
func Rehearse(jobPath, root string, w io.Writer) error {
	// A mount here in the host's own namespace would hide the host's /proc
	// and /dev: refuse unless the parent gave this process its own.
	if err := ownMountNamespace(); err != nil {
		return err
	}
	job, err := readJob(jobPath)
	if err != nil {
		return err
	}
	r, err := openRehearsal(job.Mounts)
	if err != nil {
		return err
	}
	defer r.close()
	prefix := root
	if root == "/" {
		prefix = ""
	}
	// The kernel's mounts but the root, which is prefix itself.
	for _, m := range mountAll(kernelMounts(root)[1:], prefix, r.mount) {
		fmt.Fprintf(w, "rehearsal: kernel: %s\n", m)
	}
	if err := preflight(job.Needs, prefix, true); err != nil {
		return fmt.Errorf("before init's mounts: %w", err)
	}
	for _, m := range mountAll(job.Mounts, prefix, r.mount) {
		fmt.Fprintf(w, "rehearsal: init: %s\n", m)
	}
	if err := preflight(job.Needs, prefix, false); err != nil {
		return fmt.Errorf("after init's mounts: %w", err)
	}
	if root != "/" {
		fmt.Fprintf(w, "rehearsal: every need seen; the steps are not run (the guest's programs are under its root %s)\n", root)
		return nil
	}
	return rehearseSteps(job, w)
}

// rehearseSteps runs the steps that need no KVM, their output in a folder
// of their own beside the guest's.
func rehearseSteps(job Job, w io.Writer) error {
	job.Out = filepath.Join(job.Out, "rehearsal")
	if err := os.MkdirAll(job.Out, 0o755); err != nil {
		return err
	}
	for _, s := range job.Steps {
		if !s.Rehearse {
			continue
		}
		if r := runStep(job, s, w); r.ExitCode != 0 {
			return fmt.Errorf("step %s, as the outer guest runs it: exit %d (%s; output in %s)", s.Name, r.ExitCode, r.Error,
				filepath.Join(job.Out, r.Output))
		}
	}
	return nil
}

// ownMountNamespace fails unless this process's mount namespace is not its
// parent's.
func ownMountNamespace() error {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("rehearsal: own mount namespace: %w", err)
	}
	parent, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if err != nil {
		return fmt.Errorf("rehearsal: parent's mount namespace: %w", err)
	}
	if self == parent {
		return errors.New("rehearsal: refused in the parent's mount namespace (it would mount over the host's /proc and /dev)")
	}
	return nil
}

// rehearsal mounts as the outer guest does, from the host: a 9p share is
// its host folder, bound from a descriptor opened before any mount (the
// guest's mounts may hide its path).
type rehearsal struct {
	folders map[string]*os.File // host folder of each share
	null    *os.File            // the host's /dev/null, for the stand-in /dev
}

func openRehearsal(ms []Mount) (rehearsal, error) {
	r := rehearsal{folders: map[string]*os.File{}}
	var err error
	if r.null, err = os.OpenFile("/dev/null", unix.O_PATH, 0); err != nil {
		return r, fmt.Errorf("rehearsal: %w", err)
	}
	for _, m := range ms {
		if m.FS != fs9p || r.folders[m.Host] != nil {
			continue
		}
		f, err := os.OpenFile(m.Host, unix.O_PATH|syscall.O_DIRECTORY, 0)
		if err != nil {
			r.close()
			return r, fmt.Errorf("rehearsal: share %s: %w", m.Tag, err)
		}
		r.folders[m.Host] = f
	}
	return r, nil
}

func (r rehearsal) close() {
	for _, f := range r.folders {
		f.Close()
	}
	if r.null != nil {
		r.null.Close()
	}
}

func (r rehearsal) mount(m Mount, target string) error {
	switch m.FS {
	case fs9p:
		f := r.folders[m.Host]
		if f == nil {
			return fmt.Errorf("no folder opened for %s", m.Host)
		}
		return bind(fdPath(f), target, m.ReadOnly)
	case fsDevtmpfs:
		// The host's devtmpfs is a single instance: a folder made in it
		// here would appear in the host's /dev. A tmpfs hides the host's
		// /dev as well; /dev/null is what the steps use of it.
		if err := syscall.Mount("tmpfs", target, "tmpfs", 0, ""); err != nil {
			return err
		}
		null := filepath.Join(target, "null")
		if err := os.WriteFile(null, nil, 0o666); err != nil {
			return err
		}
		return bind(fdPath(r.null), null, false)
	}
	return syscall.Mount(m.FS, target, m.FS, 0, "")
}

// fdPath names an open file by its descriptor, as /proc resolves it.
func fdPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }

func bind(src, target string, readOnly bool) error {
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	if !readOnly {
		return nil
	}
	return syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, "")
}

// rehearse runs self (this program for the host) with RehearseFlag in a
// mount namespace of its own, its output to logPath. It says "skipped"
// with why when this host gives it no namespace (not root).
func rehearse(ctx context.Context, self, jobPath, root, logPath string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, RehearseFlag, jobPath, root)
	// Unshareflags also makes / private in the new namespace (Go does what
	// unshare(1) does): no mount there reaches the host's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if werr := os.WriteFile(logPath, out.Bytes(), 0o644); werr != nil && err == nil {
		err = werr
	}
	switch {
	case errors.Is(err, syscall.EPERM) && cmd.ProcessState == nil:
		return fmt.Sprintf("skipped: no mount namespace for this user (%v): run as root to rehearse", err), nil
	case err != nil:
		return "", fmt.Errorf("the rehearsal of the outer guest's mounts failed (nothing built or booted; log %s): %w\n%s",
			logPath, err, bytes.TrimSpace(out.Bytes()))
	}
	return "ok: every need seen after the guest's mounts", nil
}
