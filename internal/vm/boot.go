package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"lab/initramfs/protocol"
	"lab/internal/results"
	"lab/internal/topology"
)

// Outcome is what one boot produced. It is filled in as far as the boot got,
// even when Boot returns an error.
type Outcome struct {
	QEMU        string            `json:"qemu"`              // binary
	Args        []string          `json:"args"`              // full command line
	QEMUVersion string            `json:"qemu_version"`      // from QMP
	VCPUs       []VCPU            `json:"vcpus"`             // from query-cpus-fast
	Memdevs     []topology.Memdev `json:"memdevs,omitempty"` // from query-memdev
	Pinned      []int             `json:"pinned,omitempty"`  // host CPU of each vCPU thread
	Records     []protocol.Record `json:"-"`
	Wall        time.Duration     `json:"wall_ns"`     // QEMU start to exit
	ToAgent     time.Duration     `json:"to_agent_ns"` // QEMU start to the agent's first record
	ExitCode    int               `json:"exit_code"`
	// THPOff: QEMU ran without transparent huge pages (TCG guests, see
	// startQEMU).
	THPOff bool `json:"thp_off,omitempty"`
	// Deterministic says what QEMU held still for an icount guest (see
	// ICountFixes): each fix's options and why.
	Deterministic []string  `json:"deterministic,omitempty"`
	Problems      []Finding `json:"console_problems,omitempty"` // WARNING, BUG, oops, RCU stall...
	// CPUSamples are the vCPU threads' host CPU times, read whenever the
	// agent sent a record (see VCPUShare).
	CPUSamples []CPUSample `json:"cpu_samples,omitempty"`
}

// VCPU is one vCPU as QMP reports it.
type VCPU struct {
	Index    int `json:"cpu-index"`
	ThreadID int `json:"thread-id"`
	Props    struct {
		Socket  int `json:"socket-id"`
		Cluster int `json:"cluster-id"`
		Core    int `json:"core-id"`
		Thread  int `json:"thread-id"`
		Node    int `json:"node-id"`
	} `json:"props"`
	Target string `json:"target"`
}

// Boot runs one guest to completion or until it stalls: deadline is how long
// the guest may take to send its first record, and then how long it may go
// quiet between records (c.Quiet when set), so that a slow but working guest
// (many oversubscribed vCPUs) is not cut off while a hung one is.
// Cancelling ctx stops QEMU as well; no QEMU outlives Boot.
func Boot(ctx context.Context, c Config, deadline time.Duration, progress func(string)) (*Outcome, error) {
	if progress == nil {
		progress = func(string) {}
	}
	args, err := c.prepare()
	if err != nil {
		return nil, err
	}
	out := &Outcome{QEMU: c.Arch.QEMU, Args: args}
	if c.Clock == results.ClockICount {
		for _, f := range ICountFixes(c.Machine(), c.Seed) {
			out.Deterministic = append(out.Deterministic, strings.Join(f.Args, " ")+": "+f.Why)
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	quiet := deadline
	if c.Quiet > 0 {
		quiet = c.Quiet
	}
	var stderr bytes.Buffer
	start := time.Now()
	cmd, exited, thpOff, err := startQEMU(c.Arch.QEMU, args, &stderr, c.Accel.Name == results.TCG)
	out.THPOff = thpOff
	if err != nil {
		return out, infra("start "+c.Arch.QEMU, err)
	}
	defer func() {
		// Whatever happened, QEMU does not outlive the boot.
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		os.Remove(c.QMPPath)
	}()

	qctx, qcancel := context.WithTimeout(bctx, deadline)
	mon, err := connectQMP(qctx, c.QMPPath, exited)
	qcancel()
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("boot interrupted: %w", ctx.Err())
		}
		return out, infra("QMP", fmt.Errorf("%v; qemu: %s", err, strings.TrimSpace(stderr.String())))
	}
	defer mon.close()
	if err := c.inspect(mon, out); err != nil {
		return out, err
	}
	progress(fmt.Sprintf("running, %d vCPUs confirmed over QMP", len(out.VCPUs)))
	sample := func(records int) {
		if s := sampleCPU(cmd.Process.Pid, out.VCPUs, records, time.Since(start)); s != nil {
			out.CPUSamples = append(out.CPUSamples, *s)
		}
	}
	sample(0)

	stalled := func(kind, why string) (*Outcome, error) {
		stop(mon, exited, cmd)
		out.Wall = time.Since(start)
		out.Records, _ = ReadRecords(c.ResultsPath())
		if ctx.Err() != nil {
			return out, fmt.Errorf("boot interrupted: %w", ctx.Err())
		}
		return out, c.bootError(kind, why)
	}
	exitErr, kind, why := c.watch(bctx, exited, out, start, deadline, quiet, progress, sample)
	if kind != "" {
		return stalled(kind, why)
	}
	out.Wall = time.Since(start)
	if cmd.ProcessState != nil {
		out.ExitCode = cmd.ProcessState.ExitCode()
	}
	return out, c.exited(ctx, out, exitErr, stderr.String())
}

// exited judges a boot whose QEMU ended without lab stopping it: lab's
// own interruption, a signal from outside lab, or the guest's end.
func (c Config) exited(ctx context.Context, out *Outcome, exitErr error, stderr string) error {
	if signalled(stderr) {
		// QEMU ends cleanly (exit 0) on SIGTERM, SIGINT or SIGHUP: the
		// guest did not stop by itself. A job scheduler's cancel or a
		// terminal's Ctrl-C signals lab and QEMU at once, and QEMU may
		// exit before lab has seen its own signal: wait a little for it.
		select {
		case <-ctx.Done():
		case <-time.After(3 * time.Second):
			return infra(c.Arch.QEMU+" was stopped from outside lab", errors.New(strings.TrimSpace(stderr)))
		}
	}
	if ctx.Err() != nil {
		// QEMU may die of the same signal as lab, before lab stops it.
		return fmt.Errorf("boot interrupted: %w", ctx.Err())
	}
	return c.finished(out, exitErr, stderr)
}

// prepare returns QEMU's arguments and readies the boot directory: no QMP
// socket or results file of an earlier boot is left to be mistaken for
// this one's.
func (c Config) prepare() ([]string, error) {
	args, err := c.Args()
	if err != nil {
		return nil, infra("QEMU command line", err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, infra("boot directory", err)
	}
	os.Remove(c.QMPPath)
	os.Remove(c.ResultsPath())
	return args, nil
}

// startQEMU starts QEMU in its own process group (a Ctrl-C reaches lab,
// which then stops QEMU itself after saving what the boot produced), to die
// with lab should lab be killed outright (Pdeathsig: no guest outlives it).
// exited receives its exit.
//
// With noTHP (TCG guests) QEMU runs without transparent huge pages, and
// thpOff says it did. QEMU asks for huge pages on all guest RAM, so every
// first touch of a 2 MiB block zeroes all of it, and a booting TCG guest
// touches its memory sparsely; huge pages buy a TCG guest little, since
// QEMU's software TLB maps 4 KiB guest pages whatever backs them (KVM
// guests keep them: their EPT mappings do use them). Measured here, 12
// alternating cold 2-vCPU boots to the agent: x86_64 1.59 -> 1.40 s
// (per-round median -0.12 s), arm64 1.66 -> 1.59 s (-0.03 s); the
// guest's wall-clock rates did not move beyond their spread.
func startQEMU(qemu string, args []string, stderr *bytes.Buffer, noTHP bool) (cmd *exec.Cmd, exited <-chan error, thpOff bool, err error) {
	cmd = exec.Command(qemu, args...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// The flag is the process's, inherited by a child and kept across
	// exec: it is set only while this QEMU starts, then put back as it was
	// (lab may itself have inherited it set).
	thpMu.Lock()
	was, _ := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	if noTHP {
		thpOff = was == 1 || unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0) == nil
	}
	err = cmd.Start()
	if noTHP && was == 0 {
		unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0)
	}
	thpMu.Unlock()
	if err != nil {
		return nil, nil, false, err
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return cmd, ch, thpOff, nil
}

// thpMu guards the process's "THP disable" flag while a QEMU starts: it is
// process-wide, like the flag.
var thpMu sync.Mutex

// inspect records what QMP says of the running guest (QEMU's version, its
// vCPU threads, its memory backends) and pins the vCPU threads if asked.
func (c Config) inspect(mon *monitor, out *Outcome) error {
	out.QEMUVersion = mon.version()
	if err := c.checkVCPUs(mon, out); err != nil {
		return err
	}
	if len(c.Shape.Nodes) > 0 {
		var err error
		if out.Memdevs, err = queryMemdevs(mon); err != nil {
			return infra("QMP query-memdev", err)
		}
	}
	if c.Pin != nil {
		if err := pin(out.VCPUs, c.Pin); err != nil {
			return infra("pin vCPU threads", err)
		}
		out.Pinned = c.Pin
	}
	return nil
}

// watch waits for QEMU to exit, following the agent's records as signs of
// life. It returns QEMU's exit, or the kind of failure and why when the
// guest flooded, went quiet past its deadline (deadline before the first
// record, quiet after) or the boot was cancelled.
func (c Config) watch(bctx context.Context, exited <-chan error, out *Outcome, start time.Time, deadline, quiet time.Duration,
	progress func(string), sample func(records int)) (exitErr error, kind, why string) {
	// Until the agent's first record, look often: ToAgent is a boot-time
	// figure (bench/boot-times), and a 200 ms tick would add up to 200 ms
	// to it. After it, records are signs of life and 200 ms is plenty.
	const (
		firstTick = 5 * time.Millisecond
		lifeTick  = 200 * time.Millisecond
	)
	tick := time.NewTicker(firstTick)
	defer tick.Stop()
	lastSize, lastLife, limit := int64(0), time.Now(), deadline
	for {
		select {
		case exitErr = <-exited:
			return exitErr, "", ""
		case <-tick.C:
			if why := flooded(c); why != "" {
				return nil, results.FailFlood, why
			}
			if fi, err := os.Stat(c.ResultsPath()); err == nil && fi.Size() > lastSize {
				lastSize, lastLife, limit = fi.Size(), time.Now(), quiet
				if out.ToAgent == 0 {
					out.ToAgent = time.Since(start)
					progress(fmt.Sprintf("agent up after %.1fs", out.ToAgent.Seconds()))
					tick.Reset(lifeTick)
					// The calibrations are done by now; a starved one
					// would spoil (or hang) all that follows.
					if kind, why := c.starved(); kind != "" {
						return nil, kind, why
					}
				}
				n := countLines(c.ResultsPath())
				sample(n)
				if c.Records != nil {
					c.Records(n)
				}
			}
			if time.Since(lastLife) > limit {
				if kind, why := c.starved(); kind != "" {
					return nil, kind, why // hung for want of a timer
				}
				if out.ToAgent == 0 {
					return nil, results.FailHang, fmt.Sprintf("deadline of %v passed before the agent reported: guest hung or too slow to boot", limit)
				}
				return nil, results.FailHang, fmt.Sprintf("deadline of %v passed without a new record from the agent: guest hung or too slow", limit)
			}
		case <-bctx.Done():
			return nil, results.FailInterrupt, "interrupted"
		}
	}
}

// starved says whether the guest's console tells that the host starved a
// boot-time calibration (arch.Arch.StarvedLines): the failure's kind and
// why, or "" when it does not.
func (c Config) starved() (kind, why string) {
	f, ok, err := starvedCalibration(c.ConsoleLog(), c.Arch.StarvedLines)
	if err != nil || !ok {
		return "", ""
	}
	return results.FailStarved, fmt.Sprintf("console line %d, %q: the kernel calibrated a timer at boot while the host left "+
		"its vCPU unrun (a loaded host; TCG on the wall clock above all), so this boot measures nothing of the kernel", f.Line, f.Text)
}

// signalled says whether QEMU's stderr has its line for a termination
// signal: "qemu-system-x86_64: terminating on signal 15 from pid 42 (lab)".
func signalled(stderr string) bool {
	return strings.Contains(stderr, ": terminating on signal ")
}

// finished judges a boot whose QEMU exited by itself: the agent's records,
// QEMU's exit, a panic, the console's complaints.
func (c Config) finished(out *Outcome, exitErr error, stderr string) error {
	var err error
	out.Records, err = ReadRecords(c.ResultsPath())
	if err != nil {
		return infra("read the agent's records", err)
	}
	if exitErr != nil {
		// The guest powers off, or reboots into -no-reboot, and QEMU exits 0:
		// anything else is QEMU's own end (killed, crashed).
		return infra(c.Arch.QEMU+" exited", fmt.Errorf("%v: %s", exitErr, strings.TrimSpace(stderr)))
	}
	for _, r := range out.Records {
		if r.Type == protocol.TypeError {
			return c.bootError(results.FailAgent, "agent: "+r.Error)
		}
	}
	if len(out.Records) == 0 || out.Records[len(out.Records)-1].Type != protocol.TypeDone {
		if panicked(c.ConsoleLog()) {
			return c.bootError(results.FailPanic, "kernel panic")
		}
		return c.bootError(results.FailStopped, "guest stopped before the agent finished")
	}
	// A boot whose kernel complained is not a clean measurement, even when
	// the agent finished: fail it and say where.
	if out.Problems, err = ScanConsole(c.ConsoleLog()); err != nil {
		return infra("scan console", err)
	}
	if len(out.Problems) > 0 {
		var lines []string
		for _, p := range out.Problems {
			lines = append(lines, p.String())
		}
		return &BootError{Kind: results.FailProblem, Reason: "the kernel reported problems:\n    " + strings.Join(lines, "\n    "),
			Console: tail(c.ConsoleLog(), 15), Log: c.ConsoleLog()}
	}
	return nil
}

// checkVCPUs reads the vCPUs back from QEMU and checks their number.
func (c Config) checkVCPUs(mon *monitor, out *Outcome) error {
	raw, err := mon.run("query-cpus-fast")
	if err != nil {
		return infra("QMP query-cpus-fast", err)
	}
	var vcpus []VCPU
	if err := json.Unmarshal(raw, &vcpus); err != nil {
		return infra("QMP query-cpus-fast", err)
	}
	out.VCPUs = vcpus
	if len(vcpus) != c.Shape.CPUs {
		return infra(fmt.Sprintf("QEMU reports %d vCPUs, asked for %d", len(vcpus), c.Shape.CPUs), nil)
	}
	return nil
}

// QMPCPUs is the QMP view of the vCPUs, for topology.Verify.
func (o *Outcome) QMPCPUs() []topology.QMPCPU {
	var out []topology.QMPCPU
	for _, v := range o.VCPUs {
		out = append(out, topology.QMPCPU{Index: v.Index, Socket: v.Props.Socket, Cluster: v.Props.Cluster,
			Core: v.Props.Core, Thread: v.Props.Thread, Node: v.Props.Node})
	}
	return out
}

func queryMemdevs(mon *monitor) ([]topology.Memdev, error) {
	raw, err := mon.run("query-memdev")
	if err != nil {
		return nil, err
	}
	var memdevs []struct {
		ID   string `json:"id"`
		Size int64  `json:"size"`
	}
	if err := json.Unmarshal(raw, &memdevs); err != nil {
		return nil, err
	}
	var out []topology.Memdev
	for _, m := range memdevs {
		out = append(out, topology.Memdev{ID: m.ID, SizeMiB: m.Size >> 20})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// pin binds each vCPU's host thread to its host CPU.
func pin(vcpus []VCPU, plan []int) error {
	for _, v := range vcpus {
		if v.Index >= len(plan) {
			return fmt.Errorf("vCPU %d has no host CPU in the plan", v.Index)
		}
		var set unix.CPUSet
		set.Set(plan[v.Index])
		if err := unix.SchedSetaffinity(v.ThreadID, &set); err != nil {
			return fmt.Errorf("vCPU %d (thread %d) to host CPU %d: %w", v.Index, v.ThreadID, plan[v.Index], err)
		}
		// Read it back: the kernel may narrow a mask (cpusets, offline CPUs).
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(v.ThreadID, &got); err != nil || got != set {
			return fmt.Errorf("vCPU %d (thread %d): affinity did not stick to host CPU %d (%v)", v.Index, v.ThreadID, plan[v.Index], err)
		}
	}
	return nil
}

// stop asks QEMU to quit over QMP, then kills it.
func stop(mon *monitor, exited <-chan error, cmd *exec.Cmd) {
	mon.quit()
	select {
	case <-exited:
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// What lab reads of a guest, at most: the guest runs a kernel built from
// someone else's patches, and must not fill lab's memory or disk.
const (
	MaxResults = 64 << 20  // the results port: records are a few KB each
	MaxConsole = 256 << 20 // the console log
	maxRecord  = 4 << 20   // one record (a result with its samples)
)

// flooded says how the guest wrote more than lab reads, "" when it did not.
func flooded(c Config) string {
	for _, f := range []struct {
		path, what string
		max        int64
	}{{c.ResultsPath(), "the results port", MaxResults}, {c.ConsoleLog(), "the console", MaxConsole}} {
		if fi, err := os.Stat(f.path); err == nil && fi.Size() > f.max {
			return fmt.Sprintf("the guest wrote %d MiB to %s, more than lab reads (%d MiB): stopped", fi.Size()>>20, f.what, f.max>>20)
		}
	}
	return ""
}

// ReadRecords parses the agent's JSON lines, at most MaxResults bytes of
// them. A torn or malformed line (the guest died mid-write, or wrote
// garbage) is dropped; everything else is kept.
func ReadRecords(path string) ([]protocol.Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeRecords(io.LimitReader(f, MaxResults))
}

// DecodeRecords reads records from r: one JSON object a line. Lines that
// are not records (garbage, a torn write, a line over 4 MiB) are skipped.
func DecodeRecords(r io.Reader) ([]protocol.Record, error) {
	var recs []protocol.Record
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, maxRecord)
		if len(line) > 0 {
			var rec protocol.Record
			if json.Unmarshal(line, &rec) == nil && rec.Type != "" {
				recs = append(recs, rec)
			}
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
	}
}

// readLine returns the next line without its newline; a line longer than
// max is returned empty (and skipped by the caller) after reading past it.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		part, isPrefix, err := br.ReadLine()
		if !long {
			line = append(line, part...)
			if len(line) > max {
				line, long = nil, true
			}
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}

// countLines counts the complete records in the results file.
func countLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(data, []byte("\n"))
}

func (c Config) bootError(kind, reason string) error {
	return &BootError{Kind: kind, Reason: reason, Console: tail(c.ConsoleLog(), 15), Log: c.ConsoleLog()}
}

func tail(path string, n int) []string {
	data, err := readTail(path, 64<<10)
	if err != nil {
		return []string{fmt.Sprintf("(no console log: %v)", err)}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r")
	}
	return lines
}

func panicked(log string) bool {
	// A panic is the last thing a kernel prints.
	data, _ := readTail(log, 1<<20)
	return bytes.Contains(data, []byte("Kernel panic"))
}

// readTail reads the last max bytes of a file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}
