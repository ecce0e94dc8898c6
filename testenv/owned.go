package testenv

import (
	"os/exec"
	"runtime"
	"syscall"
)

// starts are the requests of StartOwned, served by one goroutine locked to
// its OS thread for the life of the process.
var starts = make(chan ownedStart)

type ownedStart struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		// Linux sends a child's parent-death signal when the thread that
		// forked it exits, not only the process (prctl(2),
		// PR_SET_PDEATHSIG). Go's runtime ends a thread when a goroutine
		// locked to it returns; this one never returns, so its thread
		// lives exactly as long as the test binary.
		runtime.LockOSThread()
		for s := range starts {
			s.done <- s.cmd.Start()
		}
	}()
}

// StartOwned starts cmd so that it dies with the test binary: in a process
// group of its own (Stop-like code may signal the group) and with SIGKILL as
// its parent-death signal, so that a test binary that panics on its
// -timeout, or is killed, leaves no server behind. It keeps cmd's other
// SysProcAttr fields.
func StartOwned(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	s := ownedStart{cmd: cmd, done: make(chan error, 1)}
	starts <- s
	return <-s.done
}
