// Package apply is csimigrate's writer: it replaces in-tree PVs and
// StorageClasses by their CSI forms (and, for the undo, back) in a live
// cluster, one write at a time, with every check before the first write and
// its state kept in the cluster, so that a run interrupted anywhere is
// finished or undone by running it again. It writes only while its process
// holds the writer Lease (Options.Lease), so that one csimigrate writes at
// a time.
//
// It is handed a kubernetes.Interface and never builds a client; it never
// prints, it reports through Events. A Run advances one object by at most
// one write per Step and says when to look again, so a controller can
// requeue; Writer.PVs and Writer.Classes are the command's loop over them.
// What an object becomes and when it is refused are package rewrite's
// rules: every direction's replacement is built there.
//
// The files say what they hold: writer.go (the Writer and its Options),
// pvs.go and classes.go (the loops over PVs and StorageClasses, the dry run,
// the review), steps.go (a Run and its steps), pv_steps.go and
// class_steps.go (the steps of replacing a PV and a StorageClass, the same
// in every direction), direction.go (the directions), rewrite.go, undo.go
// and adopt_csi.go (each direction's checks and the replacement it builds),
// checks.go (the checks they share), state.go (the state kept in
// ConfigMaps), lease.go (the writer Lease), ceph_adoption.go and
// vsphere_adoption.go (adopting volumes into Ceph CSI's journal and as
// First Class Disks), listers.go (reads from a controller's caches).
//
// Its subpackages are the clients of live systems that both the writer and
// csimigrate's readers (the plan's Ceph and vCenter readers) use: cephtool
// (Ceph's command-line tools) and vcenter (vCenter).
package apply
