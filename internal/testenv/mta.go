package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// MTA is a real mail server (Debian's OpenSMTPD) started for a test on a
// loopback port: it takes mail for any address from the test and delivers
// it into one Maildir, where the test reads what a real MTA accepted.
type MTA struct {
	Addr    string // host:port
	Maildir string
	log     string
}

// StartMTA starts smtpd in the foreground with a configuration in a temp
// folder, and stops it (its whole process group) when the test ends.
func StartMTA(t testing.TB) *MTA {
	t.Helper()
	smtpd, err := exec.LookPath("smtpd")
	if err != nil {
		t.Fatalf("smtpd not found: Debian's opensmtpd package is the tests' MTA (./scripts/install-deps --test)")
	}
	dir := t.TempDir()
	m := &MTA{Maildir: filepath.Join(dir, "Maildir")}
	if err := os.MkdirAll(m.Maildir, 0o777); err != nil {
		t.Fatal(err)
	}
	// smtpd delivers as nobody: the folders down to the Maildir must let
	// it through.
	os.Chmod(m.Maildir, 0o777)
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	port := freePort(t)
	m.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	conf := filepath.Join(dir, "smtpd.conf")
	text := fmt.Sprintf("table catchall { \"@\" = \"nobody\" }\nlisten on 127.0.0.1 port %d\naction \"capture\" maildir \"%s\" virtual <catchall>\nmatch from local for any action \"capture\"\n", port, m.Maildir)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m.log = filepath.Join(dir, "smtpd.log")
	log, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	// smtpd's queue and control socket are fixed paths (/var/spool/smtpd,
	// /run/smtpd.sock): bubblewrap gives this one folders of its own there,
	// so that it starts empty, leaves nothing behind for the next, and an
	// smtpd of another test run on the machine does not stop it ("control
	// socket already listening").
	spool, run := filepath.Join(dir, "spool"), filepath.Join(dir, "run")
	for _, d := range []string{spool, run} {
		if err := os.Mkdir(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bwrap", "--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
		"--bind", spool, "/var/spool/smtpd", "--bind", run, "/run", "--die-with-parent", "--", smtpd, "-d", "-f", conf)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start smtpd: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		log.Close()
	})
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", m.Addr); err == nil {
			c.Close()
			return m
		}
		if time.Since(start) > 20*time.Second {
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("smtpd did not listen on %s in 20 s:\n%s", m.Addr, out)
		}
	}
}

// Delivered are the mails the MTA delivered (Maildir new/), waiting up to
// a minute for n of them: delivery follows the SMTP transaction.
func (m *MTA) Delivered(t testing.TB, n int) [][]byte {
	t.Helper()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(m.Maildir, "new", "*"))
		if len(files) < n && time.Since(start) > time.Minute {
			out, _ := os.ReadFile(m.log)
			t.Logf("smtpd delivered %d mails of %d in a minute; its log:\n%s", len(files), n, out)
		}
		if len(files) >= n || time.Since(start) > time.Minute {
			var out [][]byte
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, data)
			}
			return out
		}
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
