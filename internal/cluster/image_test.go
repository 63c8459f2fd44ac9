package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeLoaded(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  bool
	}{
		{DefaultImage, true},
		{"lab", true},
		{"localhost/lab:latest", true},
		{"registry.example/lab:1", false},
		{"registry:5000/lab", false},
		{"someone/lab:2", false}, // Docker Hub's user images: a registry
	} {
		if got := NodeLoaded(tc.image); got != tc.want {
			t.Errorf("NodeLoaded(%q) = %v, want %v", tc.image, got, tc.want)
		}
	}
}

// MissingImage asks the host's engine (a fake one here) and speaks only when
// it knows the image is not there.
func TestMissingImage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		engines map[string]string // fake engine: the script's body
		image   string
		want    string // in the message; "" for none
	}{
		{"podman has it", map[string]string{"podman": "exit 0"}, "lab:latest", ""},
		{"podman has not", map[string]string{"podman": "exit 1"}, "lab:latest", "podman has no image lab:latest: build it with deploy/container/build"},
		{"a registry's image is not looked up", map[string]string{"podman": "exit 1"}, "registry.example/lab:1", ""},
		{"podman fails otherwise", map[string]string{"podman": "exit 125"}, "lab:latest", ""},
		{"docker has not", map[string]string{"docker": "echo 'Error: No such image: lab:latest' >&2; exit 1"}, "lab:latest", "docker has no image lab:latest"},
		{"docker without its daemon", map[string]string{"docker": "echo 'Cannot connect to the Docker daemon' >&2; exit 1"}, "lab:latest", ""},
		{"engines that cannot answer", nil, "lab:latest", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			for name, body := range tc.engines {
				if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", bin+":/bin:/usr/bin")
			for _, engine := range []string{"podman", "docker"} {
				if _, ok := tc.engines[engine]; !ok {
					// the real one, if this host has it, must not answer
					os.WriteFile(filepath.Join(bin, engine), []byte("#!/bin/sh\nexit 127\n"), 0o755)
				}
			}
			got := MissingImage(context.Background(), tc.image)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The build script reads the image's name from DefaultImage: one owner.
func TestImageBuilderReadsDefaultImage(t *testing.T) {
	out, err := exec.Command("../../"+ImageBuilder, "--print-name").Output()
	if err != nil {
		t.Fatalf("%s --print-name: %v", ImageBuilder, err)
	}
	if got := strings.TrimSpace(string(out)); got != DefaultImage {
		t.Errorf("%s names %q, DefaultImage is %q", ImageBuilder, got, DefaultImage)
	}
}
