package child

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestStart: the line that says the binary serves is awaited, its group
// returned, and the binary runs with no cancellation delay until Stop.
func TestStart(t *testing.T) {
	script := `echo starting >&2; echo "serving delay=$CANCELLATION_DELAY_SECONDS" >&2; exec sleep 60`
	cmd, delay, err := Start(context.Background(), "/bin/sh", regexp.MustCompile(`serving delay=(\S*)`), "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	if delay != "0" {
		t.Errorf("CANCELLATION_DELAY_SECONDS = %q, want 0", delay)
	}
	if cmd.ProcessState != nil {
		t.Fatal("the binary stopped before Stop")
	}
	Stop(cmd)
	if cmd.ProcessState == nil {
		t.Error("Stop returned before the binary stopped")
	}
}

// TestStartNoGroup: a pattern without a group returns "".
func TestStartNoGroup(t *testing.T) {
	cmd, got, err := Start(context.Background(), "/bin/sh", regexp.MustCompile(`serving`), "-c", `echo serving x >&2; exec sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	defer Stop(cmd)
	if got != "" {
		t.Errorf("Start = %q, want \"\"", got)
	}
}

// TestStartExitsBeforeServing: a binary that ends without the line is an
// error that names it.
func TestStartExitsBeforeServing(t *testing.T) {
	_, _, err := Start(context.Background(), "/bin/sh", regexp.MustCompile(`serving`), "-c", `echo "bad flag" >&2; exit 2`)
	if err == nil || !strings.Contains(err.Error(), "sh exited before serving") {
		t.Fatalf("Start = %v, want sh exited before serving", err)
	}
}

// TestFreePorts: the ports are free and no two the same.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p == 0 || seen[p] {
			t.Fatalf("ports %v: zero or given twice", ports)
		}
		seen[p] = true
	}
	if len(ports) != 20 {
		t.Errorf("%d ports, want 20", len(ports))
	}
}
