package benchmark

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Ops reads how many operations a workload's program did from what it
// wrote (for MetricStressNG, the YAML file). A figure lab cannot trust is
// an error, never a guess: no metrics, a malformed count, or none done.
func (p Program) Ops(written []byte) (uint64, error) {
	switch p.Metric {
	case MetricStressNG:
		return stressNGOps(written)
	}
	return 0, fmt.Errorf("unknown metric %q of %s", p.Metric, p.Path)
}

// stressNGOps sums the bogo-ops of every stressor in the metrics list of
// stress-ng's --yaml output.
func stressNGOps(yaml []byte) (uint64, error) {
	var sum uint64
	var seen, inMetrics bool
	sc := bufio.NewScanner(bytes.NewReader(yaml))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			inMetrics = strings.TrimSpace(line) == "metrics:"
			continue
		}
		v, ok := strings.CutPrefix(strings.TrimLeft(strings.TrimSpace(line), "- "), "bogo-ops:")
		if !inMetrics || !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stress-ng's YAML: bogo-ops %q is not a count", strings.TrimSpace(v))
		}
		sum, seen = sum+n, true
	}
	switch {
	case !seen:
		return 0, fmt.Errorf("stress-ng's YAML has no bogo-ops in its metrics")
	case sum == 0:
		return 0, fmt.Errorf("stress-ng did no operation (bogo-ops 0)")
	}
	return sum, nil
}
