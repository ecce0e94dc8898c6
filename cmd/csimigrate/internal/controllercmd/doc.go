// Package controllercmd is csimigrate controller: the options, leader
// election, health and metrics endpoints, Events and memory limits around
// the controller loop of package internal/controller, and the read of the
// cluster entries the Ceph CSI drivers serve.
package controllercmd
