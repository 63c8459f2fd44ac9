package vm

import (
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// fakeQMP answers QMP as QEMU does: the greeting, the capabilities reply
// (after an event when eventFirst, in a write of its own, as in
// digitalocean/go-qemu#210), then each command's reply with its id.
func fakeQMP(t *testing.T, eventFirst bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "qmp.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(`{"QMP": {"version": {"qemu": {"micro": 2, "minor": 2, "major": 7}, "package": ""}, "capabilities": ["oob"]}}` + "\n"))
		// Commands come without newlines: read JSON values, as QEMU does.
		dec := json.NewDecoder(c)
		var caps json.RawMessage
		if dec.Decode(&caps) != nil {
			return
		}
		if eventFirst {
			c.Write([]byte(`{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "RTC_CHANGE", "data": {"offset": 0}}` + "\n"))
			time.Sleep(50 * time.Millisecond)
		}
		c.Write([]byte(`{"return": {}}` + "\n"))
		for {
			var cmd struct {
				Execute string `json:"execute"`
				ID      string `json:"id"`
			}
			if dec.Decode(&cmd) != nil {
				return
			}
			ret := `{}`
			switch cmd.Execute {
			case "query-cpus-fast":
				ret = `[{"cpu-index": 0, "thread-id": 42, "props": {"core-id": 0}}, {"cpu-index": 1, "thread-id": 43, "props": {"core-id": 1}}]`
			case "query-memdev":
				ret = `[{"id": "m1", "size": 1073741824}, {"id": "m0", "size": 536870912}]`
			}
			reply, _ := json.Marshal(map[string]any{"return": json.RawMessage(ret), "id": cmd.ID})
			c.Write(append(reply, '\n'))
		}
	}()
	return path
}

// Each command gets its own reply, whether or not an event came before the
// capabilities reply and put go-qemu's replies a place behind.
func TestMonitorMatchesReplies(t *testing.T) {
	for _, eventFirst := range []bool{false, true} {
		mon, err := connectQMP(t.Context(), fakeQMP(t, eventFirst), nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			out := &Outcome{}
			if err := (Config{}).checkVCPUs(mon, out); err == nil || len(out.VCPUs) != 2 || out.VCPUs[1].ThreadID != 43 {
				// Config{} asks for 0 vCPUs: the count's error is expected, the vCPUs must be read.
				t.Errorf("event first %v: vCPUs %+v (%v), want 2 read", eventFirst, out.VCPUs, err)
			}
			mem, err := queryMemdevs(mon)
			if err != nil || len(mem) != 2 || mem[0].ID != "m0" || mem[0].SizeMiB != 512 {
				t.Errorf("event first %v: memdevs %+v (%v)", eventFirst, mem, err)
			}
		}
		if v := mon.version(); v != "7.2.2" {
			t.Errorf("version %q", v)
		}
		mon.close()
	}
}
