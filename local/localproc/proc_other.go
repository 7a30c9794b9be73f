//go:build !linux

package localproc

import "os/exec"

func dieWithParent(*exec.Cmd) {}

// listens cannot tell, off Linux, which process holds a port: it trusts
// the engine that answered.
func listens(pid, port int) (bool, error) { return true, nil }
