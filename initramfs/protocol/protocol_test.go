package protocol

import (
	"reflect"
	"testing"
)

func TestJobRoundTrip(t *testing.T) {
	j := Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1, 2}, DurationS: 5, WarmupS: 1, Affinity: true}
	p, err := j.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCmdline("console=ttyS0 panic=-1 " + p + " quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, j) {
		t.Errorf("got %+v, want %+v", got, j)
	}
	if _, err := DecodeCmdline("console=ttyS0"); err == nil {
		t.Error("want an error without lab.job")
	}
	if _, err := DecodeCmdline(CmdlineKey + "=!!"); err == nil {
		t.Error("want an error for a bad encoding")
	}
}
