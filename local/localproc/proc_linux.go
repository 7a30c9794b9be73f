package localproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dieWithParent makes the kernel stop the engine if the process that
// started it dies without cleaning up (a test binary killed on timeout, say).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// listens says whether process pid holds the socket listening on port:
// the inode of a socket in state LISTEN on that port (/proc/net/tcp and
// tcp6) among pid's open files. Another process that took the port
// between FreePort and the engine's bind answers HTTP there too, and
// without this check an engine that failed to bind would pass for ready.
func listens(pid, port int) (bool, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listening(f, port, inodes); err != nil {
			return false, err
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, fmt.Errorf("read the engine's open files: %w", err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true, nil
		}
	}
	return false, nil
}

// listening adds to inodes those of the sockets in file (a /proc/net/tcp
// table) that listen on port.
func listening(file string, port int, inodes map[string]bool) error {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil // no IPv6
	}
	if err != nil {
		return fmt.Errorf("read the sockets listening: %w", err)
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], want) {
			continue
		}
		if _, err := strconv.ParseUint(fields[9], 10, 64); err == nil {
			inodes[fields[9]] = true
		}
	}
	return sc.Err()
}
