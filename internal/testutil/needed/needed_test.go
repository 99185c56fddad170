package needed

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a skip or a failure instead of
// ending the test.
type recorder struct {
	testing.TB
	skip, fatal string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Logf(string, ...any)          {}
func (r *recorder) Skipf(f string, args ...any)  { r.skip = fmt.Sprintf(f, args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }

// TestPath: a program is built once per process; one that cannot be had
// skips the test with why and how to have it, and fails it under
// CI=true.
func TestPath(t *testing.T) {
	builds := 0
	ok := &Program{What: "a tool", Build: func(func(string, ...any)) (string, error) { builds++; return "/bin/tool", nil }}
	for range 2 {
		if p := ok.Path(t); p != "/bin/tool" {
			t.Fatalf("path %q", p)
		}
	}
	if builds != 1 {
		t.Errorf("built %d times, want once", builds)
	}

	missing := &Program{What: "a tool", Build: func(func(string, ...any)) (string, error) { return "", errors.New("no source") },
		Otherwise: "set TOOL to one"}
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	missing.Path(r)
	if want := "skipped: this test needs a tool, and no source (set TOOL to one; under CI=true this fails)"; r.skip != want || r.fatal != "" {
		t.Errorf("outside CI: skip %q, fatal %q, want the skip %q", r.skip, r.fatal, want)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	missing.Path(r)
	if r.skip != "" || !strings.Contains(r.fatal, "a tool needed and not available under CI: no source") {
		t.Errorf("under CI: skip %q, fatal %q", r.skip, r.fatal)
	}
}
