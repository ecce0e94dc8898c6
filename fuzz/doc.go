// Package fuzz holds the native Go fuzz targets of csimigrate: every parser
// (volume handles and IDs, vSphere paths, annotation encodings, secret
// templates, versions) and every translator entry point fed arbitrary
// JSON-decoded objects. Each target checks round trips where a format has
// one, and that nothing panics or modifies its input. Seeds are added in
// code and in testdata/fuzz; crashers found are committed there as
// regression seeds.
//
// Run one target: go test ./fuzz -run '^$' -fuzz '^FuzzParseRBDHandle$' -fuzztime 30s
package fuzz
