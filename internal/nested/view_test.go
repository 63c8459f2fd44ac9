package nested

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// smokeOptions are a run's options for a checkout, cache and output folder
// ("" out: the default, inside the checkout), with the guest's root root.
func smokeOptions(root, checkout, cache, out string) Options {
	if out == "" {
		out = filepath.Join(checkout, "results", "kvm-smoke", "20261203-120000")
	}
	return Options{Arch: "x86_64", RootDir: root, Root: checkout, Cache: cache, Out: out, InnerLab: "labs/uprobe-srcu.yaml",
		Lab: "/build/lab", Self: "/build/kvm-smoke", Timeout: time.Hour}
}

// staged is o with its programs staged in dir (the output folder's bin/
// when ""), as stage would, without copying them.
func staged(o Options, dir string) (Options, staging) {
	st := staging{host: filepath.Join(o.Out, "bin"), guest: filepath.Join(o.Out, "bin")}
	switch {
	case o.RootDir != "/":
		st = staging{host: filepath.Join(o.RootDir, "kvm-smoke"), guest: "/kvm-smoke"}
	case dir != "":
		st = staging{host: dir, guest: dir, temp: true}
	}
	o.Lab, o.Self = filepath.Join(st.host, "lab"), filepath.Join(st.host, "kvm-smoke")
	return o, st
}

// TestOuterGuestSeesWhatItNeeds computes, for a checkout, a cache and an
// output folder, what the outer guest sees of each through the mounts its
// job makes, and fails if any would be hidden (issue 42: a checkout under
// /tmp, below the guest's tmpfs), without booting anything.
func TestOuterGuestSeesWhatItNeeds(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		root, checkout, cache, out  string
		stage                       string // "" for the output folder's bin/
		wantCheckoutThrough, wantFS string // the mount the checkout is seen through
	}{
		{name: "issue 42: a clone under /tmp", root: "/", checkout: "/tmp/kvmtest-clone", cache: "/root/.cache/lab"},
		{name: "under the home", root: "/", checkout: "/root/lab", cache: "/root/.cache/lab"},
		{name: "a space", root: "/", checkout: "/root/kvm smoke/clone", cache: "/root/.cache/lab"},
		{name: "a comma", root: "/", checkout: "/root/kvm,smoke", cache: "/root/kvm,smoke/cache"},
		{name: "under /run", root: "/", checkout: "/run/user/0/lab", cache: "/run/user/0/cache"},
		{name: "the cache and output under /tmp", root: "/", checkout: "/root/lab", cache: "/tmp/lab-cache", out: "/tmp/out"},
		{name: "under /dev/shm, hidden by the guest's /dev: mounted again", root: "/", checkout: "/dev/shm/lab",
			cache: "/dev/shm/cache", stage: "/tmp/kvm-smoke-stage-1"},
		{name: "arm64: a root of its own", root: "/c/nested/arm64-root", checkout: "/tmp/lab", cache: "/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, st := staged(smokeOptions(tc.root, tc.checkout, tc.cache, tc.out), tc.stage)
			job := o.job(st)
			if err := CheckView(o.RootDir, job.Mounts, job.Needs); err != nil {
				t.Fatalf("the outer guest would not see what it needs:\n%v", err)
			}
			// The inner run's lab file is the checkout's, through its share.
			full := append(View(kernelMounts(o.RootDir)), job.Mounts...)
			file := filepath.Join(tc.checkout, "labs", "uprobe-srcu.yaml")
			if host, m := full.resolve(file); host != file || m.Tag != "labsrc" {
				t.Errorf("%s resolves to %q through %s, want the checkout's share", file, host, m)
			}
			// The scratch space is the guest's own, and hides no need.
			if _, m := full.resolve(ScratchDir); m.FS != fsTmpfs {
				t.Errorf("%s is on %s", ScratchDir, m)
			}
		})
	}
}

// The check names each path the outer guest could not use, and why.
func TestCheckViewNamesWhatIsHidden(t *testing.T) {
	oldMounts := []Mount{ // the guest's mounts before issue 42
		{FS: fsProc, Target: "/proc"}, {FS: fsSysfs, Target: "/sys"}, {FS: fsDevtmpfs, Target: "/dev"},
		{FS: fsTmpfs, Target: "/dev/shm"}, {FS: fsTmpfs, Target: "/tmp", Why: "scratch"}, {FS: fsTmpfs, Target: "/run"},
		{FS: fs9p, Tag: "labcache", Host: "/root/.cache/lab", Target: "/root/.cache/lab"},
		{FS: fs9p, Tag: "labout", Host: "/tmp/kvmtest-clone/results/kvm-smoke/x", Target: "/tmp/kvmtest-clone/results/kvm-smoke/x"},
	}
	without := func(mounts []Mount, tag string) []Mount {
		return slices.DeleteFunc(slices.Clone(mounts), func(m Mount) bool { return m.Tag == tag })
	}
	for _, tc := range []struct {
		name   string
		o      Options
		stage  string
		mounts func(job Job) []Mount // default: the job's
		want   []string              // in the error
		notIn  []string              // not in it
	}{
		{name: "issue 42: tmpfs over /tmp, no share of the checkout",
			o:      smokeOptions("/", "/tmp/kvmtest-clone", "/root/.cache/lab", "/tmp/kvmtest-clone/results/kvm-smoke/x"),
			mounts: func(Job) []Mount { return oldMounts },
			want: []string{"cannot see /tmp/kvmtest-clone (lab's checkout", "cannot see /tmp/kvmtest-clone/labs/uprobe-srcu.yaml (the inner lab's file",
				"tmpfs on /tmp (scratch)"},
			notIn: []string{"the output folder", "lab's cache"}},
		{name: "init staged under /dev/shm: the kernel's devtmpfs hides it",
			o: smokeOptions("/", "/dev/shm/lab", "/root/.cache/lab", ""),
			want: []string{"cannot see /dev/shm/lab/results/kvm-smoke/20261203-120000/bin/kvm-smoke (the outer guest's init",
				"devtmpfs on /dev (the kernel's own, mounted before init"},
			notIn: []string{"lab's checkout"}},
		{name: "no share of the output folder: read-only",
			o:      smokeOptions("/", "/root/lab", "/root/.cache/lab", "/root/out"),
			mounts: func(j Job) []Mount { return without(j.Mounts, "labout") },
			want:   []string{"sees /root/out (the output folder", "read-only, through 9p /dev/root"}},
		{name: "a share under /proc",
			o:    smokeOptions("/", "/root/lab", "/proc/cache", ""),
			want: []string{"cannot mount /proc/cache (lab's cache) at its path: /proc/cache is inside proc on /proc"}},
		{name: "a root of its own without the checkout's share",
			o:      smokeOptions("/c/arm64-root", "/tmp/lab", "/c", ""),
			mounts: func(j Job) []Mount { return without(j.Mounts, "labsrc") },
			want:   []string{"cannot see /tmp/lab (lab's checkout", "at /tmp/lab it sees /c/arm64-root/tmp/lab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, st := staged(tc.o, tc.stage)
			job := o.job(st)
			mounts := job.Mounts
			if tc.mounts != nil {
				mounts = tc.mounts(job)
			}
			err := CheckView(o.RootDir, mounts, job.Needs)
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("the check says:\n%v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, w := range tc.notIn {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error names %q, which the guest sees:\n%v", w, err)
				}
			}
		})
	}
}

// A share inside another is mounted after it, whatever the order given.
func TestGuestMountsShareInsideAnotherLater(t *testing.T) {
	ms := guestMounts([]Share{{Tag: "out", Path: "/src/lab/results/x"}, {Tag: "src", Path: "/src/lab"}, {Tag: "cache", Path: "/c"}})
	var tags []string
	for _, m := range ms {
		if m.FS == fs9p {
			tags = append(tags, m.Tag)
		}
	}
	if !slices.Equal(tags, []string{"cache", "src", "out"}) {
		t.Errorf("9p mounts in order %v", tags)
	}
	// The system's and the scratch space come first: a share is never
	// under a later mount.
	if ms[0].Target != "/proc" || ms[3].Target != ScratchDir {
		t.Errorf("mounts %v", ms)
	}
}

// The staged programs go where the kernel sees them before init mounts
// anything: not under its /dev.
func TestStageDirAvoidsTheKernelsDev(t *testing.T) {
	for _, tc := range []struct {
		name, out, tmpdir string
		wantUnder         string
		temp              bool
	}{
		{"the output folder", "/root/out", "/tmp", "/root/out/bin", false},
		{"an output folder under /dev/shm", "/dev/shm/out", t.TempDir(), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", tc.tmpdir)
			o := Options{RootDir: "/", Out: tc.out}
			st, err := o.stageDir()
			if err != nil {
				t.Fatal(err)
			}
			if st.temp {
				defer os.RemoveAll(st.host)
			}
			want := tc.wantUnder
			if tc.temp {
				want, _ = filepath.EvalSymlinks(tc.tmpdir)
			}
			if st.temp != tc.temp || !strings.HasPrefix(st.host, want) || st.guest != st.host {
				t.Errorf("staged in %+v, want under %s (temp %v)", st, want, tc.temp)
			}
		})
	}
}
