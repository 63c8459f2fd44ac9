// Package proc runs the long commands lab starts (make, tar, git) so that
// stopping lab stops all of them: each command leads its own process group,
// cancelling its context kills the whole group (a make's sub-makes doing
// the real work under O=, tar's xz), and lab waits a bounded time for the
// pipes to close.
package proc

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// WaitDelay bounds how long Wait waits for a killed command's output pipes.
const WaitDelay = 5 * time.Second

// Command is exec.CommandContext for a command with children: cancelling
// ctx kills its process group, and should lab be killed outright, the
// kernel kills the command (Pdeathsig).
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		// The negative pid is the group: make and every sub-make.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = WaitDelay
	return cmd
}

// Sandbox runs commands in a bubblewrap (bwrap) namespace: the host read-
// only, no network, a private /tmp, and only the Writable folders writable.
// A series' Makefiles and Kconfig scripts run on the host during a build:
// from outside lab's checkout they are untrusted.
type Sandbox struct {
	Writable []string
	// ReadOnly are what the command reads (the source tree, the config
	// fragments, the BTF): shown read-only again over the private /tmp, so
	// that a cache or a checkout under /tmp stays visible.
	ReadOnly []string
}

// Command is Command for name, inside the sandbox when s is not nil.
func (s *Sandbox) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if s == nil {
		return Command(ctx, name, args...)
	}
	return Command(ctx, "bwrap", append(s.Args(), append([]string{"--", name}, args...)...)...)
}

// Args are bwrap's arguments before the command.
func (s *Sandbox) Args() []string {
	args := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-pid",
		// Killing bwrap (lab stopped, or died) ends the build inside.
		"--die-with-parent",
	}
	for _, r := range s.ReadOnly {
		args = append(args, "--ro-bind", r, r)
	}
	for _, w := range s.Writable {
		args = append(args, "--bind", w, w)
	}
	return args
}
