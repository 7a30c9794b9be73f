package localproc

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel stop the engine if the process that
// started it dies without cleaning up (a test binary killed on timeout, say).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
