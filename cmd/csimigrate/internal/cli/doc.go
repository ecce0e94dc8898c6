// Package cli is what every subcommand of csimigrate is built on, as
// kubectl's commands are on their options: a Command is options with
// Register (its flags), Complete, Validate and Run, driven by RunCommand;
// the flag groups the subcommands share (the input, the cluster, the
// translator, -o, -v, Ceph's tools, -adopt, vCenter); the help; the client
// (ClientFor, speaking protobuf); the cluster's CSIDrivers; the plan of the
// live cluster (LivePlan); the exit codes and the build's version.
package cli
