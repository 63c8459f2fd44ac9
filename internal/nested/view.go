package nested

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The file systems of the outer guest. A 9p mount is a host folder; every
// other kind is the guest's own and hides whatever the host has at its path.
const (
	fs9p       = "9p"
	fsProc     = "proc"
	fsSysfs    = "sysfs"
	fsDevtmpfs = "devtmpfs"
	fsTmpfs    = "tmpfs"
)

// ScratchDir is the outer guest's writable scratch space (its TMPDIR: lab
// puts QMP sockets there), a tmpfs. It is inside the guest's own /dev, which
// already hides the host's /dev, so it hides nothing more of the host: a
// tmpfs over /tmp, /run or /dev/shm of the host's root hid any checkout
// below them.
const ScratchDir = "/dev/shm"

// Mount is one file system of the outer guest, at a path of the guest.
type Mount struct {
	FS     string `json:"fs"`
	Target string `json:"target"`
	// Tag and Host are a 9p mount's share: its tag and the host folder
	// it is (for a share mounted by its own path, Host is Target).
	Tag      string `json:"tag,omitempty"`
	Host     string `json:"host,omitempty"`
	ReadOnly bool   `json:"read_only,omitempty"`
	Why      string `json:"why"` // for messages: what the guest mounts it for
}

func (m Mount) String() string {
	s := m.FS + " on " + m.Target
	switch {
	case m.FS == fs9p && m.Host == m.Target:
		s = fmt.Sprintf("9p %s on %s", m.Tag, m.Target)
	case m.FS == fs9p:
		s = fmt.Sprintf("9p %s (host %s) on %s", m.Tag, m.Host, m.Target)
	}
	if m.ReadOnly {
		s += ", read-only"
	}
	return s
}

// kernelMounts are what the outer kernel mounts before its init runs: the
// root share, and devtmpfs on /dev (CONFIG_DEVTMPFS_MOUNT in
// common.config). root is the host folder that is the guest's root.
func kernelMounts(root string) []Mount {
	return []Mount{
		{FS: fs9p, Target: "/", Tag: RootTag, Host: root, ReadOnly: true, Why: "the outer guest's root"},
		{FS: fsDevtmpfs, Target: "/dev", Why: "the kernel's own, mounted before init: CONFIG_DEVTMPFS_MOUNT"},
	}
}

// guestMounts are what the outer guest's init mounts, in order: the
// system's file systems, its scratch space, then each share at its own
// host path, so that it is seen whatever the system's mounts hide (a share
// under /dev/shm, say), a share inside another mounted after it.
func guestMounts(shares []Share) []Mount {
	ms := []Mount{
		{FS: fsProc, Target: "/proc", Why: "processes, for lab and QEMU"},
		{FS: fsSysfs, Target: "/sys", Why: "CPUs and KVM's state, for lab host"},
		// Also mounted by the kernel: repeated in case a kernel does not.
		{FS: fsDevtmpfs, Target: "/dev", Why: "devices: /dev/kvm"},
		{FS: fsTmpfs, Target: ScratchDir, Why: "the guest's scratch space (TMPDIR)"},
	}
	for _, s := range byDepth(shares) {
		ms = append(ms, Mount{FS: fs9p, Target: s.Path, Tag: s.Tag, Host: s.Path, ReadOnly: s.ReadOnly, Why: s.Why})
	}
	return ms
}

// byDepth orders shares so that a folder comes before the shares inside it
// (the output folder is inside the checkout by default).
func byDepth(shares []Share) []Share {
	out := append([]Share{}, shares...)
	depth := func(p string) int { return strings.Count(filepath.Clean(p), "/") }
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && depth(out[j].Path) < depth(out[j-1].Path); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// View is what the outer guest sees at a moment of its boot: the mounts so
// far, in order, the root first. A later mount hides what the earlier ones
// have at and below its path.
type View []Mount

// resolve is the host path the guest reaches at guest path p, and the mount
// it reaches it through; host is "" when p is on a file system of the
// guest's own.
func (v View) resolve(p string) (host string, through Mount) {
	p = filepath.Clean(p)
	for i := len(v) - 1; i >= 0; i-- {
		rel, ok := under(p, v[i].Target)
		if !ok {
			continue
		}
		if v[i].FS != fs9p {
			return "", v[i]
		}
		return filepath.Join(v[i].Host, rel), v[i]
	}
	return "", Mount{FS: "nothing", Target: "/", Why: "no root"}
}

// under says whether p is dir or inside it, and p relative to dir.
func under(p, dir string) (string, bool) {
	dir = filepath.Clean(dir)
	switch {
	case p == dir:
		return ".", true
	case dir == "/":
		return strings.TrimPrefix(p, "/"), true
	case strings.HasPrefix(p, dir+"/"):
		return strings.TrimPrefix(p, dir+"/"), true
	}
	return "", false
}

// Need is a path the outer guest uses: the host's Host at the guest's
// Guest (the same path unless it is staged into a root of its own), or,
// with Host "", space of the guest's own.
type Need struct {
	Guest    string `json:"guest"`
	Host     string `json:"host,omitempty"`
	What     string `json:"what"`
	Writable bool   `json:"writable,omitempty"`
	// Early needs are read before the guest's init mounts anything: by
	// the kernel (init itself) or by init (its job).
	Early bool `json:"early,omitempty"`
}

// check says why the guest cannot use n in view v, nil when it can.
func (v View) check(n Need) error {
	host, m := v.resolve(n.Guest)
	switch {
	case n.Host == "" && m.FS != fsTmpfs:
		return fmt.Errorf("%s (%s) is on %s, not the guest's own writable space", n.Guest, n.What, m)
	case n.Host == "":
		return nil
	case host == "":
		return fmt.Errorf("the outer guest cannot see %s (%s): it has %s (%s) there, which hides the host's",
			n.Host, n.What, m, m.Why)
	case host != n.Host:
		return fmt.Errorf("the outer guest cannot see %s (%s): at %s it sees %s, through %s (%s)",
			n.Host, n.What, n.Guest, host, m, m.Why)
	case n.Writable && m.ReadOnly:
		return fmt.Errorf("the outer guest sees %s (%s) read-only, through %s (%s), and writes there",
			n.Host, n.What, m, m.Why)
	}
	return nil
}

// CheckView says, before anything boots, whether the outer guest on the
// host folder root, mounting mounts, can use every need: early needs as the
// kernel leaves the guest to its init, the others after init's mounts. The
// error names each path it cannot use, and why.
func CheckView(root string, mounts []Mount, needs []Need) error {
	early := View(kernelMounts(root))
	full := append(append(View{}, early...), mounts...)
	errs := mountPointErrs(early, mounts)
	for _, n := range needs {
		v := full
		if n.Early {
			v = early
		}
		if err := v.check(n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mountPointErrs are the shares among mounts whose mount point init could
// not make: inside proc or sysfs, which take no folder.
func mountPointErrs(before View, mounts []Mount) []error {
	var errs []error
	v := append(View{}, before...)
	for _, m := range mounts {
		if _, through := v.resolve(m.Target); m.FS == fs9p && (through.FS == fsProc || through.FS == fsSysfs) {
			errs = append(errs, fmt.Errorf("the outer guest cannot mount %s (%s) at its path: %s is inside %s, where no folder can be made",
				m.Host, m.Why, m.Target, through))
		}
		v = append(v, m)
	}
	return errs
}

// Describe is one line per need: where the guest finds it.
func Describe(root string, mounts []Mount, needs []Need) []string {
	early := View(kernelMounts(root))
	full := append(append(View{}, early...), mounts...)
	var out []string
	for _, n := range needs {
		v, when := full, "after init's mounts"
		if n.Early {
			v, when = early, "before init's mounts"
		}
		var seen string
		switch host, m := v.resolve(n.Guest); host {
		case "":
			seen = fmt.Sprintf("%s, the guest's own: %s", n.Guest, m)
		case n.Guest:
			seen = fmt.Sprintf("%s, through %s", n.Guest, m)
		default:
			seen = fmt.Sprintf("%s, which is the host's %s, through %s", n.Guest, host, m)
		}
		out = append(out, fmt.Sprintf("%s: %s (%s)", n.What, seen, when))
	}
	return out
}
