// Package watche2e holds lab watch's end-to-end test: a real public-inbox
// inbox, real kernels built and booted for two versions of a series, and
// the replies through a real MTA. A package of its own so that go test
// runs it beside the other end-to-end packages.
package watche2e
