// Package input reads what the commands plan from: manifests (YAML or
// JSON, files, directories or standard input), the embedded sample, or a
// live cluster listed page by page. A Reader refuses what it cannot read
// whole (an invalid document, invalid UTF-8, an object given twice) and
// hands each object to a Sink, so that memory follows what the Sink keeps,
// not the input's size.
package input
