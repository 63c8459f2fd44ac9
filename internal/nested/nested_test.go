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
)

func TestOuterArgs(t *testing.T) {
	o := Outer{QEMU: "qemu-system-x86_64", Kernel: "/c/kernels/k/vmlinux", Init: "/out/bin/kvm-smoke", Job: "/out/job.json",
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
	if _, err := (Outer{CPUs: 0, MemoryMiB: 1024}).Args(); err == nil {
		t.Error("0 vCPUs: no error")
	}
}

func TestOuterCmdline(t *testing.T) {
	c := Outer{Init: "/out/bin/kvm-smoke", Job: "/out/job.json"}.Cmdline()
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
	o := Options{Lab: "/out/bin/lab", Root: "/src/lab", Cache: "/c", Out: "/out", InnerLab: "labs/x.yaml",
		InnerArgs: []string{"--cpus", "1"}, Timeout: time.Hour}
	job := o.job()
	var names []string
	for _, s := range job.Steps {
		names = append(names, s.Name)
		if s.Timeout <= 0 {
			t.Errorf("step %s without a timeout: a hang would hold the guest until the host kills it", s.Name)
		}
	}
	if !slices.Equal(names, []string{"lab-host", "lab-run-kvm"}) {
		t.Fatalf("steps %v", names)
	}
	run := strings.Join(job.Steps[1].Args, " ")
	for _, want := range []string{"/out/bin/lab run labs/x.yaml --cpus 1", "--accel kvm", "--no-build", "--cache /c", "--results /out/results"} {
		if !strings.Contains(run, want) {
			t.Errorf("inner run %q lacks %q", run, want)
		}
	}
	if job.Dir != "/src/lab" || job.Out != "/out" {
		t.Errorf("job in %s, out %s", job.Dir, job.Out)
	}
	// The cache and the output are writable, at their host paths.
	for _, s := range job.Shares {
		if s.ReadOnly || (s.Path != "/c" && s.Path != "/out") {
			t.Errorf("share %+v", s)
		}
	}
	// What the host writes, the guest reads.
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.json")
	os.WriteFile(path, data, 0o644)
	back, err := readJob(path)
	if err != nil || back.Steps[1].Timeout != time.Hour {
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
