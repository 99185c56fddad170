// Package freeze stops a test's child process as a hung server stops: the
// kernel still takes its connections, and nothing answers.
package freeze

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Timeout bounds the wait for every thread to stop.
const Timeout = 10 * time.Second

// Stop sends SIGSTOP to p and returns once every thread of p is stopped.
// The kernel hands the signal to one thread, and the process stops when
// that thread next runs: on a busy machine its other threads go on
// long enough to answer a request sent right after the signal.
func Stop(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(Timeout)
	for {
		stopped, err := Stopped(p.Pid)
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: a thread still runs %s after SIGSTOP", p.Pid, Timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// Continue lets a stopped process run again (SIGCONT).
func Continue(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// Stopped reports whether no thread of process pid runs: each is stopped
// (T, or t when traced) or has exited.
func Stopped(pid int) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread has exited
		}
		if err != nil {
			return false, err
		}
		// "pid (comm) state ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("%s/%s/stat: no state in %q", dir, task.Name(), stat)
		}
		switch stat[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			return false, nil
		}
	}
	return true, nil
}
