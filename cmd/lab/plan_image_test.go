package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lab plan --emit k8s warns when the image it names must be on the nodes
// and this host's podman has no such image; the template is written anyway
// (the nodes may have it).
func TestPlanWarnsOfAMissingImage(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "podman"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	for _, tc := range []struct {
		image, warning string
	}{
		{"localhost/nosuch:1", "lab plan: warning: podman has no image localhost/nosuch:1: build it with deploy/container/build"},
		{"registry.example/lab:1", ""},
	} {
		code, stdout, stderr := labCmd(t, "plan", srcuLab, "--shards", "2", "--emit", "k8s", "--image", tc.image)
		if code != 0 || !strings.Contains(stdout, "image: "+tc.image) {
			t.Fatalf("%s: exit %d: %s", tc.image, code, stderr)
		}
		if tc.warning == "" && stderr != "" || !strings.Contains(stderr, tc.warning) {
			t.Errorf("%s: stderr %q, want %q", tc.image, stderr, tc.warning)
		}
	}
}
