package target

import (
	"os/exec"
	"syscall"
)

// setProcAttr asks the kernel to SIGTERM the gateway if the harness dies
// without calling Close, so no orphan keeps a port or the store. (The
// signal follows the OS thread that forked; the Go runtime does not retire
// threads of unlocked goroutines, so it fires only when the harness exits.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
