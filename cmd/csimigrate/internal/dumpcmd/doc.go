// Package dumpcmd is csimigrate dump: what plan -f and rewrite -f read
// from a cluster, as one JSON List, Secret and env values left out.
package dumpcmd
