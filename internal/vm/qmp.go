package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/digitalocean/go-qemu/qmp"
)

// monitor is QEMU's QMP socket through go-qemu, each reply matched to its
// command by id. go-qemu's SocketMonitor gives Run whichever reply comes
// next: when QEMU sends an event just before its qmp_capabilities reply,
// Connect takes the event for that reply, and every later Run would get
// the reply of the command before it (digitalocean/go-qemu#210; a boot
// failed "QMP query-cpus-fast: json: cannot unmarshal object" that way,
// given qmp_capabilities' empty reply).
type monitor struct {
	mon *qmp.SocketMonitor
	seq int
}

// maxStale is how many replies to other commands run skips looking for
// its own: a stale reply puts every later one a place behind, once.
const maxStale = 4

// connectQMP waits for QEMU's QMP socket and does the handshake.
func connectQMP(ctx context.Context, path string, exited <-chan error) (*monitor, error) {
	for {
		mon, err := qmp.NewSocketMonitor("unix", path, time.Second)
		if err == nil {
			if err := mon.Connect(); err != nil {
				return nil, err
			}
			return &monitor{mon: mon}, nil
		}
		select {
		case e := <-exited:
			return nil, fmt.Errorf("qemu exited before QMP was up: %v", e)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// run executes a QMP command without arguments and returns what its reply
// returned. QEMU echoes a command's id in its reply; a reply with another
// id (or none) answered something else, and the next one in line is
// pulled with a command that changes nothing.
func (m *monitor) run(execute string) (json.RawMessage, error) {
	id := m.next()
	raw, err := m.send(execute, id)
	for stale := 0; ; stale++ {
		if err != nil {
			return nil, err
		}
		var reply struct {
			ID     string          `json:"id"`
			Return json.RawMessage `json:"return"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			return nil, fmt.Errorf("reply %q: %w", raw, err)
		}
		if reply.ID == id {
			return reply.Return, nil
		}
		if stale == maxStale {
			return nil, fmt.Errorf("no reply to %s among %d others (the last: %s)", execute, stale+1, raw)
		}
		raw, err = m.send("query-version", m.next())
	}
}

func (m *monitor) next() string {
	m.seq++
	return fmt.Sprintf("lab-%d", m.seq)
}

func (m *monitor) send(execute, id string) ([]byte, error) {
	cmd, err := json.Marshal(struct {
		Execute string `json:"execute"`
		ID      string `json:"id"`
	}{execute, id})
	if err != nil {
		return nil, err
	}
	raw, err := m.mon.Run(cmd)
	// A copy at once: Run's bytes are its reader's buffer, which the next
	// line QEMU sends overwrites (digitalocean/go-qemu#226).
	return append([]byte(nil), raw...), err
}

// version is QEMU's version from its QMP greeting.
func (m *monitor) version() string {
	if m.mon.Version == nil {
		return ""
	}
	return m.mon.Version.String()
}

// quit asks QEMU to quit; its reply, if any comes before QEMU exits, is
// not waited for.
func (m *monitor) quit() { go m.mon.Run([]byte(`{"execute":"quit"}`)) }

// close disconnects from the socket.
func (m *monitor) close() error { return m.mon.Disconnect() }
