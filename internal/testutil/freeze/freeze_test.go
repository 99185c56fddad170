package freeze

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestMain makes the test binary a child with a thread spinning on each
// of 8 Ps when FREEZE_TEST_CHILD is set.
func TestMain(m *testing.M) {
	if os.Getenv("FREEZE_TEST_CHILD") != "" {
		runtime.GOMAXPROCS(8)
		for range 8 {
			go func() {
				for { //nolint:staticcheck // SA5002: spinning is the point
				}
			}()
		}
		select {}
	}
	os.Exit(m.Run())
}

// TestStop: when Stop returns, no thread of a busy process runs, and
// after Continue they run again.
func TestStop(t *testing.T) {
	for range 20 {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), "FREEZE_TEST_CHILD=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if err := Stop(cmd.Process); err != nil {
			t.Fatal(err)
		}
		if stopped, err := Stopped(cmd.Process.Pid); err != nil || !stopped {
			t.Fatalf("after Stop: stopped %v, %v", stopped, err)
		}
		if err := Continue(cmd.Process); err != nil {
			t.Fatal(err)
		}
		running := false
		for range 1000 {
			if stopped, err := Stopped(cmd.Process.Pid); err != nil {
				t.Fatal(err)
			} else if !stopped {
				running = true
				break
			}
		}
		if !running {
			t.Fatal("after Continue: still stopped")
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// TestStoppedOfNoProcess: a process that is gone is an error, not stopped.
func TestStoppedOfNoProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if stopped, err := Stopped(cmd.Process.Pid); err == nil {
		t.Errorf("Stopped of a reaped process = %v, nil; want an error", stopped)
	}
}
