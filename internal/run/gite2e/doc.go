// Package gite2e holds the end-to-end test of a user's own git tree as
// lab's source: a worktree of it, the series applied with git am, and its
// first kernel seeded from the build folder of the same content. A package
// of its own so that go test runs it beside lab run's other end-to-end
// tests, not after them in one package.
package gite2e
