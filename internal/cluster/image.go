package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ImageBuilder is the script that builds DefaultImage from Debian packages
// (it reads the name from here: the templates and the image agree).
const ImageBuilder = "deploy/container/build"

// NodeLoaded reports whether image names no registry of its own: a bare
// name ("lab:latest") resolves to Docker Hub's official images, which have
// no lab, and "localhost/..." to no registry at all. Nodes run such an
// image only when it was loaded onto them, so pods must never pull it.
func NodeLoaded(image string) bool {
	first, _, ok := strings.Cut(image, "/")
	return !ok || first == "localhost"
}

// MissingImage looks a node-loaded image up in this host's podman (or
// docker) images and says what to do when it is not there: "" when it is,
// when the image comes from a registry (this host cannot tell), or when no
// container engine here can answer.
func MissingImage(ctx context.Context, image string) string {
	if !NodeLoaded(image) {
		return ""
	}
	for _, engine := range [][]string{{"podman", "image", "exists"}, {"docker", "image", "inspect"}} {
		if _, err := exec.LookPath(engine[0]); err != nil {
			continue
		}
		out, err := exec.CommandContext(ctx, engine[0], append(engine[1:], image)...).CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return ""
		case !errors.As(err, &exit) || exit.ExitCode() != 1:
			continue
		case engine[0] == "docker" && !strings.Contains(strings.ToLower(string(out)), "no such image"):
			continue // docker exits 1 also when its daemon is not running
		}
		return fmt.Sprintf("%s has no image %s: build it with %s, then load it onto every node (it names no registry, so pods never pull it), or push it to a registry and pass --image REGISTRY/NAME:TAG",
			engine[0], image, ImageBuilder)
	}
	return ""
}
