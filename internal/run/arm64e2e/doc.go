// Package arm64e2e holds lab run's end-to-end tests on arm64 guests. They
// are a package of their own so that go test runs them beside
// internal/run's x86_64 tests: each arch's first kernel is a cold build,
// and in one package the two would follow each other.
package arm64e2e
