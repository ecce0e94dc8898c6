package main

import "github.com/csimigrate/csimigrate/rewrite"

// A direction is what a run replaces by what, in the command's words: the
// rewrite (an in-tree PV by its CSI form) or its undo (a CSI PV csimigrate
// created by the in-tree PV it came from).
type direction struct {
	undo bool
	// what and command name the direction in messages, done says what
	// became of a target, and scope (aScope, with its article) names the
	// targets.
	what, command, done string
	scope, aScope       string
	// source is the kind of object it replaces.
	source rewrite.Kind
}

var (
	rewriteDirection = &direction{what: "a rewrite", command: "rewrite -apply", done: "rewritten", scope: "in-tree", aScope: "an in-tree", source: rewrite.KindInTree}
	undoDirection    = &direction{undo: true, what: "an undo", command: "rewrite -apply -undo", done: "undone", scope: "rewritten", aScope: "a rewritten", source: rewrite.KindRewritten}
)

func directionOf(undo bool) *direction {
	if undo {
		return undoDirection
	}
	return rewriteDirection
}

var (
	adoptDirection   = &direction{what: "an adoption", command: "rewrite -apply -adopt -adopt-csi", done: "adopted", scope: "migration-handle or static CephFS", aScope: "a migration-handle or static CephFS"}
	unadoptDirection = &direction{undo: true, what: "an undo of an adoption", command: "rewrite -apply -undo -adopt -adopt-csi", done: "given back their migration handle or static form", scope: "adopted", aScope: "an adopted"}
)

func adoptionDirectionOf(undo bool) *direction {
	if undo {
		return unadoptDirection
	}
	return adoptDirection
}
