// Package faulte2e holds lab run's end-to-end tests of what goes wrong: a
// guest that panics or hangs, QEMU killed or missing, a full disk, a
// damaged cache entry, a series that does not compile or changes no code,
// runs at once on one cache. They are a package of their own so that go
// test runs them beside internal/run's, not after them in one package.
package faulte2e
