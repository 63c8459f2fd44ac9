package nested

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// GuestFlag makes the program the outer guest's init (see Guest).
const GuestFlag = "-outer-guest-init"

// UpMarker starts the console line the outer guest's init prints first:
// the host times the outer boot by it.
const UpMarker = "kvm-smoke: outer guest up"

// Job is what the outer guest does: the host writes it, the guest's init
// reads it from a share.
type Job struct {
	Shares []Share  `json:"shares"` // mounted at their host paths
	Env    []string `json:"env"`
	Dir    string   `json:"dir"` // working folder of the steps
	Out    string   `json:"out"` // where each step's output and the status go
	Steps  []Step   `json:"steps"`
}

// Step is one command the outer guest runs, its output kept in Out/Name.txt.
type Step struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	// Timeout bounds the step: the guest powers off in time for the host
	// to read what it wrote.
	Timeout time.Duration `json:"timeout_ns"`
}

// Status is what the outer guest did, written to Out/status.json.
type Status struct {
	// Uptime is the outer kernel's uptime when init started: its boot, in
	// guest time.
	Uptime  time.Duration `json:"uptime_ns"`
	Mounts  []string      `json:"mounts"` // what init mounted, or why not
	KVM     []string      `json:"kvm"`    // the outer kernel's KVM messages
	Steps   []StepResult  `json:"steps"`
	Problem string        `json:"problem,omitempty"`
}

// StepResult is one step's outcome.
type StepResult struct {
	Name     string        `json:"name"`
	Args     []string      `json:"args"`
	ExitCode int           `json:"exit_code"`
	Error    string        `json:"error,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Output   string        `json:"output"` // file, relative to Out
}

// StatusFile is the name of the status in Job.Out.
const StatusFile = "status.json"

// Guest is the outer guest's PID 1: it mounts what lab needs, runs the
// job's steps, writes the status and powers off. It returns only when it
// could not power off.
func Guest(jobPath string, console io.Writer) error {
	defer poweroff(console)
	var st Status
	if up, err := uptime(); err == nil {
		st.Uptime = up
	}
	fmt.Fprintf(console, "%s after %.1f s (outer kernel's uptime)\n", UpMarker, st.Uptime.Seconds())
	// Read from the host's root before /tmp is mounted over it.
	job, err := readJob(jobPath)
	if err != nil {
		fmt.Fprintf(console, "kvm-smoke: %v\n", err)
		return err
	}
	st.Mounts = append(mountBase(), mountShares(job.Shares)...)
	for _, m := range st.Mounts {
		fmt.Fprintf(console, "kvm-smoke: mount %s\n", m)
	}
	st.KVM = kernelKVMLines()
	for _, l := range st.KVM {
		fmt.Fprintf(console, "kvm-smoke: dmesg: %s\n", l)
	}
	for _, s := range job.Steps {
		r := runStep(job, s, console)
		st.Steps = append(st.Steps, r)
		// Written after every step: a step that hangs the guest leaves
		// the ones before on record.
		if err := writeStatus(job.Out, st); err != nil {
			fmt.Fprintf(console, "kvm-smoke: %v\n", err)
		}
	}
	if err := writeStatus(job.Out, st); err != nil {
		fmt.Fprintf(console, "kvm-smoke: %v\n", err)
		return err
	}
	return nil
}

func readJob(path string) (Job, error) {
	var job Job
	data, err := os.ReadFile(path)
	if err != nil {
		return job, fmt.Errorf("read job: %w", err)
	}
	if err := json.Unmarshal(data, &job); err != nil {
		return job, fmt.Errorf("read job %s: %w", path, err)
	}
	return job, nil
}

func writeStatus(out string, st Status) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, StatusFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

// uptime is /proc/uptime's first figure, read before /proc is mounted by
// init: the kernel mounts nothing there, so it mounts it first itself.
func uptime() (time.Duration, error) {
	_ = os.MkdirAll("/proc", 0o555)
	_ = syscall.Mount("proc", "/proc", "proc", 0, "")
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	var s float64
	if _, err := fmt.Sscanf(string(data), "%f", &s); err != nil {
		return 0, fmt.Errorf("read /proc/uptime %q: %w", data, err)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// baseMounts are the file systems the host's read-only root needs on top
// to run lab and QEMU: /proc and /sys, devices (/dev/kvm), and writable
// /tmp and /run (QMP sockets, boot folders).
var baseMounts = []struct{ fstype, target string }{
	{"proc", "/proc"},
	{"sysfs", "/sys"},
	{"devtmpfs", "/dev"},
	{"tmpfs", "/dev/shm"},
	{"tmpfs", "/tmp"},
	{"tmpfs", "/run"},
}

func mountBase() []string {
	var out []string
	for _, m := range baseMounts {
		_ = os.MkdirAll(m.target, 0o755)
		err := syscall.Mount(m.fstype, m.target, m.fstype, 0, "")
		switch {
		case errors.Is(err, syscall.EBUSY):
			out = append(out, fmt.Sprintf("%s on %s: already", m.fstype, m.target))
		case err != nil:
			out = append(out, fmt.Sprintf("%s on %s: %v", m.fstype, m.target, err))
		default:
			out = append(out, fmt.Sprintf("%s on %s", m.fstype, m.target))
		}
	}
	return out
}

func mountShares(shares []Share) []string {
	var out []string
	for _, s := range shares {
		// A share under /tmp needs its mount point in the fresh tmpfs.
		_ = os.MkdirAll(s.Path, 0o755)
		var flags uintptr
		if s.ReadOnly {
			flags |= syscall.MS_RDONLY
		}
		err := syscall.Mount(s.Tag, s.Path, "9p", flags, "trans=virtio,version=9p2000.L,msize=262144")
		if err != nil {
			out = append(out, fmt.Sprintf("9p %s on %s: %v", s.Tag, s.Path, err))
			continue
		}
		out = append(out, fmt.Sprintf("9p %s on %s", s.Tag, s.Path))
	}
	return out
}

// kvmLine matches the outer kernel's messages about KVM and SVM.
var kvmLine = regexp.MustCompile(`(?i)\b(kvm|svm|npt|nested)\b`)

// kernelKVMLines are the kernel log's lines about KVM, read from /dev/kmsg
// up to its end. Raw reads: an *os.File on a non-blocking fd parks in Go's
// poller at the log's end instead of returning EAGAIN (the first nested run
// hung there for its whole timeout).
func kernelKVMLines() []string {
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return []string{fmt.Sprintf("(no kernel log: %v)", err)}
	}
	defer syscall.Close(fd)
	var out []string
	buf := make([]byte, 8192)
	for {
		// One record per read; EAGAIN at the end of the log.
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EPIPE) {
			continue // records overwritten while reading
		}
		if err != nil || n <= 0 {
			return out
		}
		// "6,123,456789,-;text": the text after the first ';'.
		if _, text, ok := strings.Cut(string(buf[:n]), ";"); ok && kvmLine.MatchString(text) {
			out = append(out, strings.TrimSpace(strings.SplitN(text, "\n", 2)[0]))
		}
	}
}

// runStep runs one step, its output to Out/Name.txt and the console.
func runStep(job Job, s Step, console io.Writer) StepResult {
	r := StepResult{Name: s.Name, Args: s.Args, Output: s.Name + ".txt"}
	fmt.Fprintf(console, "kvm-smoke: step %s: %s\n", s.Name, strings.Join(s.Args, " "))
	f, err := os.Create(filepath.Join(job.Out, r.Output))
	if err != nil {
		r.ExitCode, r.Error = -1, err.Error()
		return r
	}
	defer f.Close()
	ctx := context.Background()
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	if len(s.Args) == 0 {
		r.ExitCode, r.Error = -1, "empty step"
		return r
	}
	cmd := exec.CommandContext(ctx, s.Args[0], s.Args[1:]...)
	cmd.Dir, cmd.Env = job.Dir, job.Env
	w := io.MultiWriter(f, prefixed(console, s.Name+" | "))
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	err = cmd.Run()
	r.Elapsed = time.Since(start)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
		r.Error = err.Error()
	case err != nil:
		r.ExitCode, r.Error = -1, err.Error()
	}
	if ctx.Err() != nil {
		r.Error = fmt.Sprintf("timed out after %s", s.Timeout)
	}
	fmt.Fprintf(console, "kvm-smoke: step %s: exit %d after %.1f s\n", s.Name, r.ExitCode, r.Elapsed.Seconds())
	return r
}

// prefixed writes whole lines to w, each after prefix.
func prefixed(w io.Writer, prefix string) io.Writer { return &lineWriter{w: w, prefix: prefix} }

type lineWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		fmt.Fprintf(l.w, "%s%s\n", l.prefix, l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// poweroff ends the outer guest: QEMU exits with it. PID 1 must not
// return, or the kernel panics.
func poweroff(console io.Writer) {
	syscall.Sync()
	err := syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	fmt.Fprintf(console, "kvm-smoke: power off: %v\n", err)
	for {
		time.Sleep(time.Hour)
	}
}
