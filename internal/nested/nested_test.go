package nested

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/internal/arch"
)

func TestOuterArgs(t *testing.T) {
	o := Outer{Arch: mustArch(t, "x86_64"), Root: "/", QEMU: "qemu-system-x86_64", Kernel: "/c/kernels/k/vmlinux", Init: "/out/bin/kvm-smoke", Job: "/out/job.json",
		CPUs: 2, MemoryMiB: 3072, Console: "/out/console.log",
		Shares: []Share{{Tag: "labcache", Path: "/root/.cache/lab"}, {Tag: "labout", Path: "/out"}}}
	args, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{
		"-M q35", "-cpu max", "-accel tcg,thread=multi", "-smp 2", "-m 3072M", "-kernel /c/kernels/k/vmlinux", "-no-reboot",
		"-fsdev local,id=fs0,path=/,security_model=none,multidevs=remap,readonly=on",
		"-device virtio-9p-pci,fsdev=fs0,mount_tag=/dev/root",
		"-fsdev local,id=fs1,path=/root/.cache/lab,security_model=none,multidevs=remap -device virtio-9p-pci,fsdev=fs1,mount_tag=labcache",
		"-fsdev local,id=fs2,path=/out,security_model=none,multidevs=remap -device",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU args lack %q:\n%s", want, line)
		}
	}
	// Only the root is read-only.
	if n := strings.Count(line, "readonly=on"); n != 1 {
		t.Errorf("%d read-only shares, want 1 (the root)", n)
	}
	if _, err := (Outer{Arch: mustArch(t, "x86_64"), CPUs: 0, MemoryMiB: 1024}).Args(); err == nil {
		t.Error("0 vCPUs: no error")
	}
}

// arm64's outer guest has EL2 and a root of its own: a tree of arm64
// packages, since the host's programs are x86_64's.
func TestOuterArgsArm64(t *testing.T) {
	o := Outer{Arch: mustArch(t, "arm64"), Root: "/c/arm64-root", Kernel: "/k/Image", Init: "/kvm-smoke/kvm-smoke", Job: "/kvm-smoke/job.json",
		CPUs: 2, MemoryMiB: 3072, Console: "/out/console.log"}
	args, err := o.Args()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"-M virt,virtualization=on,gic-version=3", "-cpu max,pauth-impdef=on",
		"path=/c/arm64-root,security_model=none,multidevs=remap,readonly=on -device virtio-9p-device,fsdev=fs0,mount_tag=/dev/root",
		"console=ttyAMA0"} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU args lack %q:\n%s", want, line)
		}
	}
}

// With a root of its own, the outer guest runs staged copies, and gets lab's
// checkout as a share.
func TestStageForeignRoot(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	for _, f := range []string{"lab", "kvm-smoke"} {
		os.WriteFile(filepath.Join(bin, f), []byte("#!/bin/true\n"), 0o755)
	}
	o := Options{RootDir: filepath.Join(dir, "root"), Lab: filepath.Join(bin, "lab"), Self: filepath.Join(bin, "kvm-smoke"),
		Root: "/src/lab", Cache: "/c", Out: filepath.Join(dir, "out"), InnerLab: "labs/x.yaml", Timeout: time.Hour}
	st, err := o.stage()
	if err != nil {
		t.Fatal(err)
	}
	if got := st.lab(o.Self); got != "/kvm-smoke/kvm-smoke" {
		t.Errorf("init at %s in the guest", got)
	}
	for _, d := range []string{"proc", "sys", "dev", "c", "src/lab", o.Out} {
		if fi, err := os.Stat(filepath.Join(o.RootDir, d)); err != nil || !fi.IsDir() {
			t.Errorf("no mount point %s in the root: %v", d, err)
		}
	}
	job := o.job(st)
	if !strings.HasPrefix(job.Steps[0].Args[0], "/kvm-smoke/") {
		t.Errorf("lab host runs %s", job.Steps[0].Args[0])
	}
	var src bool
	for _, s := range sharesOf(job.Mounts) {
		src = src || (s.Path == "/src/lab" && s.ReadOnly)
	}
	if !src {
		t.Errorf("mounts %+v: no read-only checkout", job.Mounts)
	}
	if err := CheckView(o.RootDir, job.Mounts, job.Needs); err != nil {
		t.Errorf("a root of its own: %v", err)
	}
}

func mustArch(t *testing.T, name string) arch.Arch {
	t.Helper()
	a, err := arch.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestOuterCmdline(t *testing.T) {
	c, err := Outer{Arch: mustArch(t, "x86_64"), Init: "/out/bin/kvm-smoke", Job: "/out/job.json"}.Cmdline()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"root=/dev/root rootfstype=9p rootflags=trans=virtio", " ro ", "console=ttyS0", "init=/out/bin/kvm-smoke"} {
		if !strings.Contains(c, want) {
			t.Errorf("cmdline %q lacks %q", c, want)
		}
	}
	// The kernel gives init the words after "--": the guest flag and the job.
	if _, tail, _ := strings.Cut(c, " -- "); tail != GuestFlag+" /out/job.json" {
		t.Errorf("init's arguments %q, want %q", tail, GuestFlag+" /out/job.json")
	}
}

func TestJobRunsLabUnderKVM(t *testing.T) {
	o := Options{RootDir: "/", Lab: "/out/bin/lab", Root: "/src/lab", Cache: "/c", Out: "/out", InnerLab: "labs/x.yaml",
		InnerArgs: []string{"--cpus", "1"}, Timeout: time.Hour}
	job := o.job(staging{host: "/out/bin", guest: "/out/bin"})
	var names []string
	for _, s := range job.Steps {
		names = append(names, s.Name)
		if s.Timeout <= 0 {
			t.Errorf("step %s without a timeout: a hang would hold the guest until the host kills it", s.Name)
		}
	}
	if !slices.Equal(names, []string{"lab-plan", "lab-host", "lab-run-kvm"}) {
		t.Fatalf("steps %v", names)
	}
	// lab plan reads the inner lab's file as the inner run does, and needs
	// no KVM: the rehearsal on the host runs it too.
	plan := strings.Join(job.Steps[0].Args, " ")
	if !job.Steps[0].Rehearse || !strings.HasPrefix(plan, "/out/bin/lab plan labs/x.yaml --cpus 1 --accel kvm --cache /c") {
		t.Errorf("plan step %q (rehearse %v)", plan, job.Steps[0].Rehearse)
	}
	for _, s := range job.Steps[1:] {
		if s.Rehearse {
			t.Errorf("step %s rehearsed on the host: it needs KVM", s.Name)
		}
	}
	run := strings.Join(job.Steps[2].Args, " ")
	for _, want := range []string{"/out/bin/lab run labs/x.yaml --cpus 1", "--accel kvm", "--no-build", "--cache /c", "--results /out/results"} {
		if !strings.Contains(run, want) {
			t.Errorf("inner run %q lacks %q", run, want)
		}
	}
	if job.Dir != "/src/lab" || job.Out != "/out" {
		t.Errorf("job in %s, out %s", job.Dir, job.Out)
	}
	// The checkout is read-only, the cache and the output writable, each
	// at its host path.
	want := map[string]bool{"/src/lab": true, "/c": false, "/out": false}
	for _, s := range sharesOf(job.Mounts) {
		if ro, ok := want[s.Path]; !ok || ro != s.ReadOnly {
			t.Errorf("share %+v", s)
		}
		delete(want, s.Path)
	}
	if len(want) > 0 {
		t.Errorf("no share of %v", want)
	}
	if !slices.Contains(job.Env, "TMPDIR="+ScratchDir) {
		t.Errorf("env %v: TMPDIR is not the scratch space", job.Env)
	}
	// What the host writes, the guest reads.
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.json")
	os.WriteFile(path, data, 0o644)
	back, err := readJob(path)
	if err != nil || back.Steps[2].Timeout != time.Hour {
		t.Errorf("read back %+v, %v", back, err)
	}
}

func TestPrefixedWritesWholeLines(t *testing.T) {
	var b bytes.Buffer
	w := prefixed(&b, "x | ")
	w.Write([]byte("one\ntw"))
	w.Write([]byte("o\nthree"))
	if got, want := b.String(), "x | one\nx | two\n"; got != want {
		t.Errorf("got %q, want %q (a partial line waits)", got, want)
	}
}

func TestConsoleTailTimesInit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.log")
	os.WriteFile(path, []byte("[    0.000000] Linux version\n"+UpMarker+" after 9.0 s\npartial"), 0o644)
	var b bytes.Buffer
	tail := &consoleTail{path: path, log: &b, start: time.Now().Add(-time.Second)}
	tail.poll()
	if tail.up < time.Second {
		t.Errorf("up %s: the marker was not timed", tail.up)
	}
	if strings.Contains(b.String(), "partial") || strings.Count(b.String(), "outer | ") != 2 {
		t.Errorf("copied %q", b.String())
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(" line\n")
	f.Close()
	tail.poll()
	if !strings.HasSuffix(b.String(), "outer | partial line\n") {
		t.Errorf("the finished line was not copied: %q", b.String())
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []StepResult
		ok    bool
	}{
		{"none", nil, false},
		{"all passed", []StepResult{{Name: "a"}, {Name: "b"}}, true},
		{"one failed", []StepResult{{Name: "a"}, {Name: "b", ExitCode: 1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Result{Status: Status{Steps: tc.steps}}.Check()
			if (err == nil) != tc.ok {
				t.Errorf("Check() = %v", err)
			}
		})
	}
}

func TestNewest(t *testing.T) {
	dir := t.TempDir()
	old, recent := filepath.Join(dir, "a", "results.json"), filepath.Join(dir, "b", "results.json")
	for _, p := range []string{old, recent} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("{}"), 0o644)
	}
	os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	if got := newest(dir, "results.json"); got != recent {
		t.Errorf("newest = %s, want %s", got, recent)
	}
	if got := newest(filepath.Join(dir, "none"), "results.json"); got != "" {
		t.Errorf("newest in a missing folder = %q", got)
	}
}
