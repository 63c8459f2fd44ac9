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
	// Mounts are what init mounts, in order, after the kernel's (see
	// guestMounts): the shares among them at their host paths.
	Mounts []Mount `json:"mounts"`
	// Needs are what the steps use: init checks each before the steps,
	// and names the ones it cannot use instead of running them.
	Needs []Need   `json:"needs"`
	Env   []string `json:"env"`
	Dir   string   `json:"dir"` // working folder of the steps
	Out   string   `json:"out"` // where each step's output and the status go
	Steps []Step   `json:"steps"`
}

// Step is one command the outer guest runs, its output kept in Out/Name.txt.
type Step struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	// Timeout bounds the step: the guest powers off in time for the host
	// to read what it wrote.
	Timeout time.Duration `json:"timeout_ns"`
	// Rehearse: the step needs no KVM, so the host's rehearsal of the
	// guest's mounts runs it too (see Rehearse).
	Rehearse bool `json:"rehearse,omitempty"`
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
	// Read from the guest's root before init mounts anything.
	job, err := readJob(jobPath)
	if err != nil {
		fmt.Fprintf(console, "kvm-smoke: %v\n", err)
		return err
	}
	st.Mounts = mountAll(job.Mounts, "", guestMount)
	for _, m := range st.Mounts {
		fmt.Fprintf(console, "kvm-smoke: mount %s\n", m)
	}
	// Early needs were read already: init runs, and it has its job.
	if err := preflight(job.Needs, "", false); err != nil {
		st.Problem = err.Error()
		fmt.Fprintf(console, "kvm-smoke: %v\n", err)
		if werr := writeStatus(job.Out, st); werr != nil {
			fmt.Fprintf(console, "kvm-smoke: %v\n", werr)
		}
		return err
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

// mountAll mounts each of ms in order, with mount, at its target under
// prefix (the guest's root: "" in the guest), and says what it did. A
// mount point on the guest's own file systems (a share under /dev/shm) is
// made first; on the root it is the host's folder, which exists.
func mountAll(ms []Mount, prefix string, mount func(m Mount, target string) error) []string {
	var out []string
	for _, m := range ms {
		target := filepath.Join(prefix, m.Target)
		_ = os.MkdirAll(target, 0o755)
		err := mount(m, target)
		switch {
		case errors.Is(err, syscall.EBUSY):
			out = append(out, fmt.Sprintf("%s: already", m))
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", m, err))
		default:
			out = append(out, m.String())
		}
	}
	return out
}

// guestMount mounts m at target in the outer guest.
func guestMount(m Mount, target string) error {
	if m.FS != fs9p {
		return syscall.Mount(m.FS, target, m.FS, 0, "")
	}
	var flags uintptr
	if m.ReadOnly {
		flags |= syscall.MS_RDONLY
	}
	return syscall.Mount(m.Tag, target, "9p", flags, "trans=virtio,version=9p2000.L,msize=262144")
}

// preflight checks the needs (the early ones when early is set, else the
// others) at their guest paths under prefix: each exists, and a writable
// one takes a file. The error names each that fails, with the host path.
func preflight(needs []Need, prefix string, early bool) error {
	var errs []error
	for _, n := range needs {
		if n.Early != early {
			continue
		}
		if err := usable(n, filepath.Join(prefix, n.Guest)); err != nil {
			name := n.Host
			if name == "" {
				name = n.Guest
			}
			errs = append(errs, fmt.Errorf("the outer guest cannot use %s (%s): %w", name, n.What, err))
		}
	}
	return errors.Join(errs...)
}

// usable says whether path exists and, for a writable need, takes a file.
func usable(n Need, path string) error {
	fi, err := os.Stat(path)
	if err != nil || !n.Writable {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a folder", path)
	}
	f, err := os.CreateTemp(path, ".kvm-smoke-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
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
