// Package container holds the test of the node image that
// deploy/container/build makes (the package has no code of its own).
package container

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lab/internal/cluster"
	"lab/internal/run"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
)

// The node image, built as the templates' users would build it, runs lab:
// lab host sees QEMU for both arches, lab build of the seed lab finds its
// kernels in the mounted kernel cache and builds the initramfs offline with
// the image's Go (its folder starts empty), and one icount boot per variant
// measures a benchmark inside the container. About 85 s with a warm kernel
// cache (a cold one compiles two kernels first); it fetches some 450 MB of
// packages from Debian's mirror.
func TestNodeImage(t *testing.T) {
	testenv.E2E(t, "the node image: build it, then build and boot in it")
	if os.Getuid() != 0 {
		t.Skip("the node image is built as root (mmdebstrap's root mode, podman's root storage): run the end-to-end tests as root to test it")
	}
	for _, tool := range []string{"podman", "mmdebstrap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: ./scripts/install-deps --test installs it", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	cache := testbed.DefaultCache()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	hostKernels := hostBuild(t, ctx, cache)

	// A name of the test's own, so that the image a user built stays. It
	// is kept for the next run: an image of this commit and Go, which
	// deploy/container/build labels, is that run's fixture as a cached
	// kernel is (building it takes 2-4 minutes and fetches some 450 MB).
	// podman image rm it to build it again.
	image := strings.TrimSuffix(cluster.DefaultImage, ":latest") + "-e2e:test"
	commit := command(t, ctx, "git", "rev-parse", "HEAD")
	goVersion := command(t, ctx, "go", "env", "GOVERSION")
	if built := builtFrom(ctx, image); built == commit+" "+goVersion {
		t.Logf("%s was built from %s with %s by an earlier run: not built again", image, commit[:12], goVersion)
	} else {
		start := time.Now()
		out := command(t, ctx, "./build", "--name", image)
		t.Logf("built %s in %s (it was built from %q):\n%s", image, time.Since(start).Round(time.Second), built, tail(out, 3))
	}

	// What the image records of itself, read from inside it as its users would.
	record := []byte(podmanRun(t, ctx, image)("cat", "/etc/lab-image.json"))
	for _, want := range []string{`"release_date": "20`, `"qemu-system-x86:amd64"`, `"qemu-system-arm:amd64"`, `"linux-source-6.12:all"`, `"go": "go1.`, `"` + commit + `"`} {
		if !bytes.Contains(record, []byte(want)) {
			t.Errorf("/etc/lab-image.json has no %s:\n%s", want, record)
		}
	}
	labels := command(t, ctx, "podman", "image", "inspect", "--format", "{{index .Labels \"lab.debian.release-date\"}} {{.Size}}", image)
	t.Logf("image label lab.debian.release-date and size in bytes: %s", labels)
	if !strings.HasPrefix(labels, "20") {
		t.Errorf("image has no lab.debian.release-date label: %q", labels)
	}

	// lab plan --emit k8s asks the host's podman about the image it names.
	if msg := cluster.MissingImage(ctx, image); msg != "" {
		t.Errorf("the built image is missing to lab plan: %s", msg)
	}
	if msg := cluster.MissingImage(ctx, image+"-nosuch"); !strings.Contains(msg, "podman has no image "+image+"-nosuch") {
		t.Errorf("an image podman does not have: %q", msg)
	}

	results := t.TempDir()
	// The kernels come from the host's cache; the initramfs is built in the
	// image, into a folder of the test's own over the cache's.
	runIn := podmanRun(t, ctx, image, "-v", cache+":/cache", "-v", t.TempDir()+":/cache/initramfs",
		"-e", "LAB_CACHE=/cache", "-v", results+":/results")

	host := runIn("lab", "host")
	t.Logf("lab host in the image:\n%s", host)
	for _, want := range []string{"x86_64 guests: TCG", "arm64 guests: TCG"} {
		if !strings.Contains(host, want) && !strings.Contains(host, strings.Replace(want, "TCG", "KVM", 1)) {
			t.Errorf("lab host has no %q", want)
		}
	}
	if strings.Contains(host, "guests: none (") {
		t.Errorf("lab host finds an arch without QEMU in the image")
	}

	// A node image without QEMU for an arch: lab host says which and what
	// to install.
	const noARM = "arm64 guests: none (qemu-system-aarch64 is not on the PATH: install Debian's qemu-system-arm)"
	if out := runIn("sh", "-c", "rm /usr/bin/qemu-system-aarch64 && lab host"); !strings.Contains(out, noARM) {
		t.Errorf("lab host without qemu-system-aarch64:\n%s\nwant %q", out, noARM)
	}

	tiny := []string{"labs/uprobe-srcu.yaml", "--arch", "x86_64", "--cpus", "1", "--measure", "icount"}
	// Said here, not where it ran: a log from there could come after a
	// failed test has ended.
	hb := <-hostKernels
	if hb.err != nil {
		t.Fatalf("the host's lab build: %v\n%s", hb.err, hb.log)
	}
	t.Logf("the host's lab build, beside the image's (%s):\n%s", hb.took, tail(hb.log, 4))
	start := time.Now()
	build := runIn(append([]string{"lab", "build", "--results", "/results/build"}, tiny...)...)
	t.Logf("lab build in the image (%s):\n%s", time.Since(start).Round(time.Second), tail(build, 8))
	if !strings.Contains(build, "built: ") || !regexp.MustCompile(`initramfs amd64: done`).MatchString(build) || strings.Contains(build, "initramfs amd64: cached") {
		t.Fatalf("lab build did not build the initramfs in the image:\n%s", build)
	}

	start = time.Now()
	boot := runIn(append([]string{"lab", "run", "--boots", "1", "--benchmarks", "uprobe-nop", "--producers", "1",
		"--duration", "250ms", "--warmup", "0", "--no-controls", "--no-build", "--results", "/results"}, tiny...)...)
	t.Logf("lab run in the image (%s):\n%s", time.Since(start).Round(time.Second), boot)
	if !strings.Contains(boot, "TCG icount") || !regexp.MustCompile(`(?m)^ uprobe-nop +1 +[0-9.]+ \(`).MatchString(boot) {
		t.Errorf("the run printed no icount table with a uprobe-nop row")
	}
	if got, _ := filepath.Glob(filepath.Join(results, "uprobe-srcu", "*", "results.json")); len(got) != 1 {
		t.Errorf("results.json in the mounted results folder: %v", got)
	}
}

// podmanRun returns a function that runs a command in a fresh container of
// image and returns its output. Where podman's defaults cannot start a
// container it says why and adapts, as a user of such a host would:
// crun refuses a cgroup v1 host whose cgroup v2 has a controller (runc
// starts), and a root without CAP_SYS_RESOURCE cannot raise the open files
// and processes limits to podman's defaults (the host's own are given; the
// kernel also refuses a processes limit above pid_max).
func podmanRun(t *testing.T, ctx context.Context, image string, args ...string) func(cmd ...string) string {
	t.Helper()
	flags := []string{"run", "--rm"}
	try := func() (string, error) {
		out, err := exec.CommandContext(ctx, "podman", append(append(flags, image), "true")...).CombinedOutput()
		return string(out), err
	}
	out, err := try()
	for fixed := map[string]bool{}; err != nil; out, err = try() {
		switch why := strings.TrimSpace(out); {
		case strings.Contains(out, "cgroups in hybrid mode") && !fixed["runtime"]:
			if _, err := exec.LookPath("runc"); err != nil {
				t.Fatalf("podman's crun cannot run here (%s) and runc is missing: apt-get install runc", why)
			}
			t.Logf("podman's crun cannot run here (%s): using runc", why)
			flags, fixed["runtime"] = append(flags, "--runtime", "runc"), true
		case strings.Contains(out, "rlimit") && !fixed["limits"]:
			limits := hostLimits(t)
			t.Logf("podman cannot set its default limits here (%s): giving %s", why, strings.Join(limits, " "))
			flags, fixed["limits"] = append(flags, limits...), true
		default:
			t.Fatalf("podman run %s true: %v\n%s", image, err, out)
		}
	}
	flags = append(flags, args...)
	return func(cmd ...string) string {
		t.Helper()
		return command(t, ctx, "podman", append(append(flags, image), cmd...)...)
	}
}

// hostLimits are this process's open files and processes limits as podman
// --ulimit flags, the processes one no higher than the kernel's pid_max.
func hostLimits(t *testing.T) []string {
	t.Helper()
	var nofile, nproc unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &nproc); err != nil {
		t.Fatal(err)
	}
	procs := nproc.Cur
	if data, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if max, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil && max < procs {
			procs = max
		}
	}
	return []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Cur), "--ulimit", fmt.Sprintf("nproc=%d:%d", procs, procs)}
}

// command runs name with args from this folder and returns its output; the
// test fails with the output when it fails.
func command(t *testing.T, ctx context.Context, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// builtFrom is the commit and Go version the image was built from (its
// labels), or "" when podman has no such image.
func builtFrom(ctx context.Context, image string) string {
	out, err := exec.CommandContext(ctx, "podman", "image", "inspect", "--format",
		`{{index .Labels "org.opencontainers.image.revision"}} {{index .Labels "lab.go"}}`, image).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// hostBuilt is how the host's build ended, what it printed and its time.
type hostBuilt struct {
	err  error
	log  string
	took time.Duration
}

// hostBuild builds the seed lab's x86_64 kernels into the host's cache (or
// finds them there, or waits on another package's test building them),
// beside the image's build: the image's lab sees the cache at another path,
// and a build folder it made would hold that path. Started first, so that
// the image's download and the wait for the other packages' cold kernels
// (scripts/test starts this package first) overlap instead of adding up.
func hostBuild(t *testing.T, ctx context.Context, cache string) <-chan hostBuilt {
	done := make(chan hostBuilt, 1)
	lab, err := spec.Load("../../labs/uprobe-srcu.yaml")
	if err == nil {
		lab.Matrix.Arch, lab.Matrix.CPUs, lab.Matrix.Measure = []string{"x86_64"}, []int{1}, spec.MeasureICount
		err = lab.Validate()
	}
	if err != nil {
		done <- hostBuilt{err: err}
		return done
	}
	resultsDir := t.TempDir()
	go func() {
		start := time.Now()
		var out bytes.Buffer
		_, _, err := run.Run(ctx, run.Options{Lab: lab, CacheDir: cache, ResultsDir: resultsDir, ModuleRoot: "../..",
			Command: []string{"go", "test"}, Out: &out, BuildOnly: true})
		done <- hostBuilt{err, out.String(), time.Since(start).Round(time.Second)}
	}()
	return done
}
