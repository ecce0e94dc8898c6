package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// RunUntilTimeout runs the test binary again as a child that runs only the
// test named, with env added to its environment and -test.timeout d, and
// fails t unless the child died on that timeout (the panic "test timed
// out", which runs no cleanup); it returns the child's output. A test uses
// it to prove that what it starts does not outlive a test binary killed by
// its timeout: the child, told so by env, starts it and waits.
func RunUntilTimeout(t testing.TB, test string, d time.Duration, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.timeout="+d.String(), "-test.v")
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || !strings.Contains(out.String(), "panic: test timed out after "+d.String()) {
		s := out.String()
		if len(s) > 3000 {
			s = s[len(s)-3000:]
		}
		t.Fatalf("the child did not die on its timeout (%v):\n%s", err, s)
	}
	return out.String()
}

// Running reports whether pid is a live process (not a zombie waiting to be
// reaped).
func Running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Left asks left what is still there every 200 ms, for up to d (the kernel
// may take a moment to tear killed processes down), and returns its last
// answer: nil once nothing is left.
func Left(d time.Duration, left func() []string) []string {
	deadline := time.Now().Add(d)
	for {
		l := left()
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(200 * time.Millisecond)
	}
}
