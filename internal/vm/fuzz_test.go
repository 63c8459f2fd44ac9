package vm

import (
	"bytes"
	"strings"
	"testing"

	"lab/initramfs/protocol"
)

// The agent's records and the console come from a kernel built from
// someone else's patches: whatever they hold, decoding and scanning must
// neither panic nor keep more than their bounds.

func FuzzDecodeRecords(f *testing.F) {
	f.Add([]byte(`{"type":"hello","hello":{"release":"6.12.117+","online_cpus":2}}` + "\n" + `{"type":"result","result":{"benchmark":"uprobe-nop","producers":1,"samples":[{"interval_ns":1000000000,"hits":1000,"rate":1000}]}}` + "\n" + `{"type":"done"}` + "\n"))
	f.Add([]byte(`{"type":"result","result":{"samples":[{"interval_ns":-1,"hits":18446744073709551615}]}}` + "\n{\"type\":"))
	f.Add([]byte("\x00\xff\n\n{}\n[1,2]\n\"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := DecodeRecords(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("a bytes.Reader cannot fail: %v", err)
		}
		if len(recs) > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d records from %d lines", len(recs), bytes.Count(data, []byte("\n"))+1)
		}
		for _, r := range recs {
			if r.Type == "" {
				t.Fatalf("a record without a type was kept: %+v", r)
			}
			if r.Result != nil {
				protocol.Rate(r.Result.Samples) // must not panic on any figures
			}
		}
	})
}

func FuzzScanConsole(f *testing.F) {
	f.Add("[    1.0] WARNING: CPU: 0 PID: 1 at kernel/events/uprobes.c:100 handle_swbp+0x1/0x2\n")
	f.Add("Kernel panic - not syncing: Attempted to kill init!\r\n" + strings.Repeat("A", 70000) + "\nBUG: unable to handle\n")
	f.Add("\x00\x1b[31mrcu: INFO: rcu_sched self-detected stall on CPU\nnot ok 1 kprobes_test\n")
	f.Fuzz(func(t *testing.T, text string) {
		found, err := ScanConsoleText(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if len(found) > maxFindings {
			t.Fatalf("%d findings, more than %d", len(found), maxFindings)
		}
		for _, fd := range found {
			if len(fd.Text) > 510 || fd.Line < 1 {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}

// A guest that floods the results port is bounded: lab reads at most
// MaxResults bytes, and lines over 4 MiB are skipped, not kept in memory.
func TestDecodeRecordsBounds(t *testing.T) {
	long := `{"type":"error","error":"` + strings.Repeat("x", maxRecord+10) + `"}` + "\n"
	recs, err := DecodeRecords(strings.NewReader(long + `{"type":"done"}` + "\n"))
	if err != nil || len(recs) != 1 || recs[0].Type != protocol.TypeDone {
		t.Fatalf("records %v, %v: want the long line skipped and the next kept", recs, err)
	}
}
