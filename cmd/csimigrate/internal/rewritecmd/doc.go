// Package rewritecmd is csimigrate rewrite: the review (a script, YAML or
// JSON of the steps, from its embedded templates review.sh.tmpl and
// review_journal.sh.tmpl), the targets it is given, and -apply (the
// writer of package apply run on the live cluster: its events as lines,
// the summary, the record of a review that the apply must match).
package rewritecmd
