package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cancelling kills the grandchildren too, and Wait returns at once, even
// though a grandchild held the output pipe (as make's sub-make does).
func TestCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pidFile := t.TempDir() + "/pid"
	cmd := Command(ctx, "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; wait")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var grandchild int
	for i := 0; i < 100 && grandchild == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		data, _ := os.ReadFile(pidFile)
		grandchild, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if grandchild == 0 {
		t.Fatal("the grandchild did not start")
	}
	start := time.Now()
	cancel()
	cmd.Wait()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Wait took %v after cancel", d)
	}
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(grandchild, 0); err == nil {
		// It may be a zombie until reaped by init; check its state.
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(grandchild) + "/stat")
		if !strings.Contains(string(data), ") Z ") {
			t.Errorf("grandchild %d still running: %s", grandchild, data)
		}
	}
}

// Inside the sandbox the host is read-only but for the writable folders,
// and there is no network.
func TestSandbox(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed (Debian package bubblewrap; ./scripts/install-deps installs it)")
	}
	// Both under /tmp (t.TempDir), as a cache or a CI checkout may be: the
	// private /tmp must not hide them.
	w, ro := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ro, "in"), []byte("source"), 0o644)
	s := &Sandbox{Writable: []string{w}, ReadOnly: []string{ro}}
	run := func(script string) error {
		return s.Command(context.Background(), "sh", "-c", script).Run()
	}
	if err := run("echo ok > " + w + "/f"); err != nil {
		t.Errorf("writing a writable folder: %v", err)
	}
	if err := run("grep -q source " + ro + "/in"); err != nil {
		t.Errorf("reading a read-only folder under /tmp: %v", err)
	}
	if err := run("echo no > " + ro + "/f"); err == nil {
		t.Error("wrote into a read-only folder")
	}
	// The sandbox's /tmp itself, whatever $TMPDIR says.
	private := filepath.Join("/tmp", filepath.Base(w)+"-private")
	if err := run("echo private > " + private); err != nil {
		t.Errorf("writing the private /tmp: %v", err)
	}
	if _, err := os.Stat(private); err == nil {
		os.Remove(private)
		t.Error("the sandbox's /tmp is the host's")
	}
	if err := run("cat /proc/net/dev | grep -q eth0"); err == nil {
		t.Error("a network device inside the sandbox")
	}
	if err := (*Sandbox)(nil).Command(context.Background(), "true").Run(); err != nil {
		t.Errorf("no sandbox: %v", err)
	}
}
