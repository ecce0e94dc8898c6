package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/csimigrate/csimigrate/volumeid"
)

// clusterIDOptions are clusterid's flags.
type clusterIDOptions struct{ monitors string }

const clusterIDSummary = "Prints the Ceph CSI clusterID that migration derives from a monitor list: the MD5 of the\n" +
	"comma-joined monitors exactly as given (not `md5sum <<<`, which hashes a trailing newline).\n\n" +
	"  csimigrate clusterid -monitors 10.70.53.126:6789,10.70.53.127:6789"

func runClusterID(args []string, stdout, stderr io.Writer) int {
	return runCommand("clusterid", clusterIDSummary, &clusterIDOptions{}, args, nil, stdout, stderr)
}

func (o *clusterIDOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.monitors, "monitors", "", "comma-separated monitors, exactly as in the StorageClass or joined from the PV")
}

func (o *clusterIDOptions) complete(fs *flag.FlagSet) error { return noArgs(fs.Args()) }

func (o *clusterIDOptions) validate() error {
	if o.monitors == "" {
		return errors.New("-monitors is required")
	}
	return nil
}

func (o *clusterIDOptions) run(_ io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, volumeid.ClusterID(o.monitors))
	if strings.Contains(o.monitors, ", ") {
		fmt.Fprintf(stderr, "note: the monitors contain \", \"; spacing is part of the hash, so use exactly the string the StorageClass has\n")
	}
	return exitOK
}
