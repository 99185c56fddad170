// Package child runs the binaries that the demo and the records' capture
// build: it starts one and waits until it says it serves, stops it, and
// finds the free ports they listen on.
package child

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// Start starts the binary at path and waits for a line of its standard
// error that re matches; it returns re's first group, if any. The rest of
// its standard error is read and dropped. ckegen, as CKE's server, waits
// CANCELLATION_DELAY_SECONDS (5 by default) after SIGTERM before it
// stops: the binary is started with 0.
func Start(ctx context.Context, path string, re *regexp.Regexp, args ...string) (*exec.Cmd, string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "CANCELLATION_DELAY_SECONDS=0")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	r := bufio.NewReader(pipe)
	for {
		line, err := r.ReadString('\n')
		if m := re.FindStringSubmatch(line); m != nil {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			if len(m) > 1 {
				return cmd, m[1], nil
			}
			return cmd, "", nil
		}
		if err != nil {
			Stop(cmd)
			return nil, "", fmt.Errorf("%s exited before serving: %s", filepath.Base(path), line)
		}
	}
}

// Stop sends the process SIGTERM and waits for it, at most ten seconds
// before it kills it.
func Stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// FreePorts are n free TCP ports of 127.0.0.1, no two the same.
func FreePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		// Held until every port is chosen, so that no two are the same:
		// closing it only frees the port.
		defer func() { _ = ln.Close() }()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
