// Package testsupport holds what the tests share, apart from the production
// helpers in internal/: gen (rapid generators of valid and hostile objects),
// plugintest (the contract tests and benchmarks every plugin passes) and
// peertest (the peers' own code the differential tests run).
package testsupport
