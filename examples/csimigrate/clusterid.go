package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/csimigrate/csimigrate/volumeid"
)

func runClusterID(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("clusterid", "Prints the Ceph CSI clusterID that migration derives from a monitor list: the MD5 of the\n"+
		"comma-joined monitors exactly as given (not `md5sum <<<`, which hashes a trailing newline).\n\n"+
		"  csimigrate clusterid -monitors 10.70.53.126:6789,10.70.53.127:6789", stderr)
	mons := fs.String("monitors", "", "comma-separated monitors, exactly as in the StorageClass or joined from the PV")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *mons == "" {
		fmt.Fprintln(stderr, "csimigrate clusterid: -monitors is required")
		return exitUsage
	}
	fmt.Fprintln(stdout, volumeid.ClusterID(*mons))
	if strings.Contains(*mons, ", ") {
		fmt.Fprintf(stderr, "note: the monitors contain \", \"; spacing is part of the hash, so use exactly the string the StorageClass has\n")
	}
	return exitOK
}
