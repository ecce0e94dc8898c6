// Package clusteridcmd is csimigrate clusterid: the Ceph CSI clusterID
// migration derives from a monitor list.
package clusteridcmd
