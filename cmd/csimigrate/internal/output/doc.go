// Package output is what the command prints: a plan as tables (the long
// texts below each table, or in it with -o wide), the rescue's commands,
// the writer's refusals and errors in the command's words (its flags and
// subcommands, which the engine's own texts never name), and objects as
// YAML or JSON.
package output
