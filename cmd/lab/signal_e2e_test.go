package main

// lab itself interrupted, for real: SIGINT and SIGTERM during the source's
// extraction, a build and a boot, and SIGKILL during a build. lab must stop
// everything it started, exit 128+signal, keep what it measured, and leave
// nothing that stops the next run.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lab/internal/results"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
)

// started is a lab process whose output is watched.
type started struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	seen  chan string // lines, as they come
	done  chan error
}

func startLab(t *testing.T, args ...string) *started {
	t.Helper()
	bin, err := testenv.LabBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = "../.." // lab's checkout: the initramfs is built from it
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	s := &started{cmd: cmd, seen: make(chan string, 1000), done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
			select {
			case s.seen <- sc.Text():
			default:
			}
		}
	}()
	go func() { s.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return s
}

func (s *started) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// await waits for a line containing want.
func (s *started) await(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case l := <-s.seen:
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q after %v:\n%s", want, limit, s.output())
		}
	}
}

// stop sends sig and returns lab's exit code and how long it took to go.
func (s *started) stop(t *testing.T, sig syscall.Signal) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("lab still runs 60 s after %v:\n%s", sig, s.output())
	}
	return s.cmd.ProcessState.ExitCode(), time.Since(start)
}

// left lists processes whose command line holds all of words.
func left(words ...string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(b), "\x00", " ")
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, filepath.Base(filepath.Dir(p))+": "+line)
		}
	}
	return out
}

// descendants lists the processes under s's lab whose command line holds
// all of words. Other packages' tests build in the same cache at the same
// time: whether lab left a make of its own running is a question about
// these processes alone.
func (s *started) descendants(words ...string) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		var pid, ppid int
		var state string
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			fmt.Sscan(string(b[:strings.IndexByte(string(b), ' ')]), &pid)
			fmt.Sscan(string(b[i+1:]), &state, &ppid)
			parent[pid] = ppid
		}
	}
	var out []int
	for _, l := range left(words...) {
		var pid int
		fmt.Sscan(strings.SplitN(l, ":", 2)[0], &pid)
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == s.cmd.Process.Pid {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// running lists which of pids still run (a zombie does not), after
// waiting a few seconds at most for them to go.
func running(pids []int) []int {
	var out []int
	for i := 0; i < 50; i++ {
		out = out[:0]
		for _, pid := range pids {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := strings.LastIndexByte(string(b), ')'); err == nil && i > 0 && !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z") {
				out = append(out, pid)
			}
		}
		if len(out) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out
}

// settle waits for processes holding words to go, a few seconds at most.
func settle(words ...string) []string {
	for i := 0; i < 50; i++ {
		if l := left(words...); len(l) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left(words...)
}

// SIGINT and SIGTERM during a boot: the guest stops at once, lab exits with
// 130 or 143, and the interrupted boot is in results.json with its kind.
func TestSignalDuringBoot(t *testing.T) {
	testenv.E2E(t, "boots a real kernel and interrupts lab")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			res := t.TempDir()
			s := startLab(t, "run", "labs/uprobe-srcu.yaml", "--cpus", "1", "--boots", "1", "--duration", "30s", "--warmup", "0",
				"--benchmarks", "uprobe-nop", "--only", "patched", "--results", res)
			s.await(t, "agent up", 20*time.Minute)
			code, took := s.stop(t, sig)
			if code != 128+int(sig) || took > 20*time.Second {
				t.Errorf("exit %d after %v, want %d at once:\n%s", code, took, 128+int(sig), s.output())
			}
			files, _ := filepath.Glob(filepath.Join(res, "uprobe-srcu", "*", "results.json"))
			if len(files) != 1 {
				t.Fatalf("results: %v", files)
			}
			r, err := results.Load(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Boots) != 1 || r.Boots[0].Failure == nil || r.Boots[0].Failure.Kind != results.FailInterrupt || r.Complete {
				t.Errorf("saved: complete %v, boots %+v", r.Complete, r.Boots)
			}
			if l := settle("qemu-system", res); len(l) > 0 {
				t.Errorf("QEMU left running: %v", l)
			}
		})
	}
}

// uniqueLab writes a lab whose series changes kernel/fork.c in a way no
// other run has built: its patched kernel must be compiled.
func uniqueLab(t *testing.T, tag string) string {
	t.Helper()
	root := testenv.Checkout(t, "../..")
	tree, err := source.Prepare(context.Background(), source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, testbed.DefaultCache(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	stamp := fmt.Sprintf("%s %d", tag, time.Now().UnixNano())
	testenv.WriteSeries(t, tree, root, "sig", []testenv.Edit{{Subject: "fork: a new string", File: "kernel/fork.c",
		Change: testenv.Replace("#include <linux/slab.h>\n", "#include <linux/slab.h>\nconst char lab_signal_test[] = \""+stamp+"\";\n")}})
	tree.Close()
	return testenv.WriteLab(t, root, "sig", `name: sig
series: sig
mode: apply
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [usermode-count]
  producers: [1]
  boots: 1
  duration: 250ms
  warmup: 0s
  controls: false
  measure: wall # the tests read exit codes and processes, not figures
`)
}

// awaitMake waits until lab's build of the patched kernel runs make, and
// returns make's processes. Not a fixed time after lab names the kernel:
// lab then waits for the source tree while another run (another package of
// the suite) builds in it, minutes on a fresh machine.
func (s *started) awaitMake(t *testing.T) []int {
	t.Helper()
	s.await(t, "kernel x86_64/patched ...", 20*time.Minute)
	deadline := time.Now().Add(20 * time.Minute)
	for time.Now().Before(deadline) {
		if makes := s.descendants("make", "O="+testbed.DefaultCache()); len(makes) > 0 {
			// Into the build, past make's start: its sub-makes run too.
			time.Sleep(3 * time.Second)
			if now := s.descendants("make", "O="+testbed.DefaultCache()); len(now) > 0 {
				return now
			}
			return makes
		}
		select {
		case err := <-s.done:
			t.Fatalf("lab ended (%v) before its build ran make:\n%s", err, s.output())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("no make under lab 20 minutes after it named its kernel:\n%s", s.output())
	return nil
}

// SIGTERM during a build: make and its sub-makes stop with lab, which
// exits 143; the next run of the same lab builds and boots.
func TestSignalDuringBuild(t *testing.T) {
	testenv.E2E(t, "builds a real kernel and interrupts lab")
	lab := uniqueLab(t, "sigterm")
	res := t.TempDir()
	s := startLab(t, "run", lab, "--results", res)
	makes := s.awaitMake(t)
	code, took := s.stop(t, syscall.SIGTERM)
	if code != 143 || took > 20*time.Second {
		t.Errorf("exit %d after %v, want 143 at once:\n%s", code, took, s.output())
	}
	if l := running(makes); len(l) > 0 {
		t.Errorf("lab's make processes %v still run after lab stopped", l)
	}
	again := startLab(t, "run", lab, "--results", res)
	if err := <-again.done; err != nil {
		t.Fatalf("the next run: %v\n%s", err, again.output())
	}
}

// SIGKILL during a build: lab cannot clean up, so the next run must: it
// stops the make left behind, and builds a kernel that boots; no
// half-written image is ever taken from the cache.
func TestSIGKILLDuringBuild(t *testing.T) {
	testenv.E2E(t, "builds a real kernel and kills lab")
	lab := uniqueLab(t, "sigkill")
	res := t.TempDir()
	s := startLab(t, "run", lab, "--results", res)
	s.awaitMake(t)
	s.cmd.Process.Kill()
	<-s.done
	again := startLab(t, "run", lab, "--results", res)
	if err := <-again.done; err != nil {
		t.Fatalf("the next run: %v\n%s", err, again.output())
	}
	if !strings.Contains(again.output(), "kernel x86_64/patched:") || strings.Contains(again.output(), "patched: cached") {
		t.Errorf("the next run took the killed build's kernel from the cache:\n%s", again.output())
	}
}

// SIGINT during the source's extraction: tar and xz stop, lab exits 130,
// and the half-extracted tree is not taken for a whole one by the next run,
// which extracts again.
func TestSignalDuringExtraction(t *testing.T) {
	testenv.E2E(t, "extracts the kernel source and interrupts lab")
	cache := t.TempDir()
	for i := 0; i < 2; i++ {
		s := startLab(t, "run", "labs/uprobe-srcu.yaml", "--cache", cache, "--results", t.TempDir())
		s.await(t, "extract ", 5*time.Minute)
		time.Sleep(3 * time.Second)
		code, took := s.stop(t, syscall.SIGINT)
		if code != 130 || took > 20*time.Second {
			t.Errorf("run %d: exit %d after %v, want 130 at once:\n%s", i, code, took, s.output())
		}
		if l := settle("tar", cache); len(l) > 0 {
			t.Errorf("tar left running: %v", l)
		}
		infos, _ := filepath.Glob(filepath.Join(cache, "src", "tarball-*.json"))
		if len(infos) != 0 {
			t.Errorf("an interrupted extraction was recorded as done: %v", infos)
		}
	}
}
