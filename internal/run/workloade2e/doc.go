// Package workloade2e holds lab run's end-to-end tests of the workload
// benchmarks: guest programs from Debian's packages (stress-ng), measured
// under icount like the probe benchmarks. A package of its own so that go
// test runs it beside lab run's other end-to-end tests.
package workloade2e
