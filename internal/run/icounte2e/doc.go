// Package icounte2e holds lab run's end-to-end tests of QEMU's
// instruction-count clock: one image gives one figure, boot after boot and
// side by side, and that figure sees a series' change of path length. A
// package of its own so that go test runs it beside lab run's other
// end-to-end tests, not after them in one package.
package icounte2e
