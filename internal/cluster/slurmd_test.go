package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmCluster is a throw-away one-node Slurm cluster (munged, slurmctld,
// slurmd) started without systemd, every file of it in one temp folder, as
// ../shared/reference/slurm-single-node.sh does: see its report for the
// pitfalls each step avoids.
type slurmCluster struct {
	t       *testing.T
	dir     string
	conf    string
	marker  string // SLURM_LAB_TEST=<dir> in the environment of everything it started
	daemons []*daemon
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startSlurm starts the cluster and registers its teardown, which runs
// when the test fails too.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a Slurm cluster needs root: slurmd runs jobs as their user")
	}
	// From Debian's slurm-wlm, slurmctld, slurmd, slurm-client and munge.
	for _, tool := range []string{"munged", "munge", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: run ./scripts/install-deps --test (Debian packages slurm-wlm slurmctld slurmd slurm-client munge)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "lab-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{t: t, dir: dir, conf: filepath.Join(dir, "slurm.conf"), marker: "SLURM_LAB_TEST=" + dir}
	t.Cleanup(c.stop)
	// munged needs every directory up to its socket traversable (pitfall 1).
	for _, d := range []string{"", "munge", "state", "log", "run", "spool/" + shortHost(t)} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, d), 0o755)
	}
	c.startMunge()
	if err := os.WriteFile(c.conf, []byte(c.config()), 0o644); err != nil {
		t.Fatal(err)
	}
	c.startDaemon("slurmctld", "slurmctld", "-D", "-f", c.conf)
	c.startDaemon("slurmd", "slurmd", "-D", "-f", c.conf)
	c.waitIdle(60 * time.Second)
	return c
}

func shortHost(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := strings.Cut(h, ".")
	return name
}

// Env is the environment of commands that talk to the cluster, marked so
// that teardown finds whatever they leave behind.
func (c *slurmCluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.conf, c.marker)
}

func (c *slurmCluster) startMunge() {
	key := filepath.Join(c.dir, "munge", "munge.key")
	if out, err := exec.Command("mungekey", "-c", "-k", key).CombinedOutput(); err != nil {
		c.t.Logf("mungekey: %v %s; a random key instead", err, out)
		buf := make([]byte, 1024)
		rand.Read(buf)
		if err := os.WriteFile(key, buf, 0o400); err != nil {
			c.t.Fatal(err)
		}
	}
	os.Chmod(key, 0o400)
	sock := c.socket()
	c.startDaemon("munged", "munged", "-F", "-S", sock, "--key-file="+key,
		"--pid-file="+filepath.Join(c.dir, "munge", "munged.pid"), "--seed-file="+filepath.Join(c.dir, "munge", "munged.seed"))
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("munged made no socket: %s", c.logTail("munged"))
}

func (c *slurmCluster) socket() string { return filepath.Join(c.dir, "munge", "munge.socket") }

// startDaemon starts a daemon in the foreground of its own process, its
// output in log/NAME.out.
func (c *slurmCluster) startDaemon(name string, args ...string) {
	log, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.Env(), log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(d.done) }()
	c.daemons = append(c.daemons, d)
}

// config is slurm.conf: this host as controller and only node, the node's
// shape from slurmd -C (pitfall 3), no accounting, no cgroups, no mail,
// everything under the temp folder, fast batch scheduling (pitfall 5).
func (c *slurmCluster) config() string {
	host := shortHost(c.t)
	hw := map[string]string{}
	out, _ := exec.Command("slurmd", "-C").Output()
	line, _, _ := strings.Cut(string(out), "\n")
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			hw[k] = v
		}
	}
	mem, _ := strconv.Atoi(hw["RealMemory"])
	node := fmt.Sprintf("CPUs=%s Boards=1 SocketsPerBoard=%s CoresPerSocket=%s ThreadsPerCore=%s RealMemory=%d",
		hw["CPUs"], hw["SocketsPerBoard"], hw["CoresPerSocket"], hw["ThreadsPerCore"], max(mem-1024, 256))
	if hw["CPUs"] == "" {
		node = "CPUs=1"
	}
	ctld, slurmd := freePort(c.t), freePort(c.t)
	d := c.dir
	return fmt.Sprintf(`ClusterName=labtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[4]s
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool/%%n
SlurmctldPidFile=%[5]s/run/slurmctld.pid
SlurmdPidFile=%[5]s/run/slurmd.pid
SlurmctldLogFile=%[5]s/log/slurmctld.log
SlurmdLogFile=%[5]s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
KillWait=10
NodeName=%[1]s NodeAddr=127.0.0.1 %[6]s State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, ctld, slurmd, c.socket(), d, node)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs a Slurm client command against the cluster.
func (c *slurmCluster) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *slurmCluster) waitIdle(timeout time.Duration) {
	var state string
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		state, _ = c.run("sinfo", "-h", "-N", "-o", "%T")
		if state == "idle" {
			return
		}
		if strings.Contains(state, "drain") || strings.Contains(state, "inval") {
			break
		}
		for _, d := range c.daemons {
			select {
			case <-d.done:
				c.t.Fatalf("%s exited: %s", d.name, c.logTail(d.name))
			default:
			}
		}
	}
	node, _ := c.run("scontrol", "show", "node")
	c.t.Fatalf("node not idle (%q): %s\n%s", state, node, c.logTail("slurmctld"))
}

// waitGone waits until a job (all its array tasks) has left the queue.
// A finished job's record lasts MinJobAge (300 s); after that squeue says
// "Invalid job id", which is gone too. A failing squeue is not.
func (c *slurmCluster) waitGone(ctx context.Context, job string) error {
	for {
		out, err := c.run("squeue", "-h", "-j", job)
		if (err == nil && out == "") || strings.Contains(out, "Invalid job id") {
			return nil
		}
		select {
		case <-ctx.Done():
			q, _ := c.run("squeue")
			return fmt.Errorf("job %s still queued: %w\n%s", job, ctx.Err(), q)
		case <-time.After(time.Second):
		}
	}
}

// states are a job's (and its array tasks') JobState=... ExitCode=... pairs.
func (c *slurmCluster) states(job string) []string {
	out, _ := c.run("scontrol", "show", "job", "-o", job)
	var st []string
	for _, line := range strings.Split(out, "\n") {
		var id, state, exit string
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "JobId":
				id = v
			case "ArrayTaskId":
				id += "_" + v
			case "JobState":
				state = v
			case "ExitCode":
				exit = v
			}
		}
		if state != "" {
			st = append(st, fmt.Sprintf("%s %s %s", id, state, exit))
		}
	}
	return st
}

func (c *slurmCluster) logTail(name string) string {
	var b strings.Builder
	for _, f := range []string{name + ".out", name + ".log"} {
		data, err := os.ReadFile(filepath.Join(c.dir, "log", f))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", f, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// stop tears the cluster down: cancel every job and wait for the queue to
// empty (job processes are not slurmd's children: pitfall 6), stop slurmd
// and slurmctld, kill whatever still carries the marker (a process that
// left the job's tree: pitfall 7), stop munged, and check that nothing of
// the cluster is left.
func (c *slurmCluster) stop() {
	if len(c.daemons) > 0 {
		c.run("scancel", "--partition=debug")
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		for ctx.Err() == nil {
			if out, err := c.run("squeue", "-h"); err != nil || out == "" {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		cancel()
	}
	if c.t.Failed() {
		c.t.Logf("Slurm logs (kept in %s):\n%s%s", c.dir, c.logTail("slurmctld"), c.logTail("slurmd"))
	}
	for _, name := range []string{"slurmd", "slurmctld"} {
		c.stopDaemon(name)
	}
	for _, pid := range marked(c.marker) {
		if c.isDaemon(pid) {
			continue
		}
		c.t.Logf("killing pid %d, left behind by a job", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	c.stopDaemon("munged")
	time.Sleep(200 * time.Millisecond)
	if left := marked(c.marker); len(left) > 0 {
		c.t.Errorf("processes of the Slurm cluster still running: %v", left)
	}
	for _, d := range c.daemons {
		if alive(d.cmd.Process.Pid) {
			c.t.Errorf("%s (pid %d) still running", d.name, d.cmd.Process.Pid)
		}
	}
	if !c.t.Failed() {
		os.RemoveAll(c.dir)
	}
}

func (c *slurmCluster) isDaemon(pid int) bool {
	for _, d := range c.daemons {
		if d.cmd.Process.Pid == pid {
			return true
		}
	}
	return false
}

// stopDaemon sends TERM, then KILL after 10 s, and waits.
func (c *slurmCluster) stopDaemon(name string) {
	for _, d := range c.daemons {
		if d.name != name {
			continue
		}
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
	}
}

// marked lists the processes whose environment holds marker.
func marked(marker string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var out []int
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == marker && alive(pid) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
