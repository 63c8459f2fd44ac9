// Package testbed is what lab's commands that build and boot kernels
// share, below run, bisect and track: the plan of every guest shape of a
// lab on this host (Plan, before anything is built), the source tree with
// a kernel builder and an initramfs per arch (Bench, Kernels), booting a
// kernel into a run's folder and checking what the guest delivered
// (Booter), and putting each finished boot into the run's record (AddBoot)
// in the record types of package results (RecordMatrix, RecordBuild, ...).
// A new command that builds and boots is a thin layer on it.
package testbed
