package clusteridcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/csimigrate/csimigrate/cmd/csimigrate/internal/cli"
	"github.com/csimigrate/csimigrate/volumeid"
)

// options are clusterid's flags.
type options struct{ monitors string }

// Summary is what csimigrate clusterid does, as its help and docs/flags.md say.
const Summary = "Prints the Ceph CSI clusterID that migration derives from a monitor list: the MD5 of the\n" +
	"comma-joined monitors exactly as given (not `md5sum <<<`, which hashes a trailing newline).\n\n" +
	"  csimigrate clusterid -monitors 10.70.53.126:6789,10.70.53.127:6789"

// Run runs csimigrate clusterid with args and returns its exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	return cli.RunCommand("clusterid", Summary, &options{}, args, nil, stdout, stderr)
}

func (o *options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.monitors, "monitors", "", "comma-separated monitors, exactly as in the StorageClass or joined from the PV")
}

func (o *options) Complete(fs *flag.FlagSet) error { return cli.NoArgs(fs.Args()) }

func (o *options) Validate() error {
	if o.monitors == "" {
		return errors.New("-monitors is required")
	}
	return nil
}

func (o *options) Run(_ io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, volumeid.ClusterID(o.monitors))
	if strings.Contains(o.monitors, ", ") {
		fmt.Fprintf(stderr, "note: the monitors contain \", \"; spacing is part of the hash, so use exactly the string the StorageClass has\n")
	}
	return cli.ExitOK
}

// New is the clusterid command's options, for its flags (completion, the
// flag reference).
func New() cli.Command { return &options{} }
