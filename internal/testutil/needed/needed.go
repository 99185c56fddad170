// Package needed gives a test a program it runs for real (the
// kube-apiserver, CKE's binaries, a Vault), built once per test process.
// A test that cannot have it is skipped with the reason and how to have
// it, and fails instead under CI=true, where every program must be had.
package needed

import (
	"os"
	"sync"
	"testing"
	"time"
)

// Program is a program tests need.
type Program struct {
	// What names it, as "this test needs WHAT" reads: "a real
	// kube-apiserver".
	What string
	// Build returns its path, building it first when needed (the
	// builds of internal/testutil/buildcache/programs).
	Build func(logf func(string, ...any)) (string, error)
	// Otherwise says how to have it without a build: "set
	// CKEGEN_KUBE_APISERVER to a built binary, or ...".
	Otherwise string

	once sync.Once
	path string
	err  error
}

// Path is the program's path, built once per test process; a test that
// cannot have it is skipped, or fails under CI=true.
func (p *Program) Path(t testing.TB) string {
	t.Helper()
	p.once.Do(func() {
		start := time.Now()
		p.path, p.err = p.Build(nil)
		if d := time.Since(start); p.err == nil && d > time.Second {
			t.Logf("%s built in %s: %s", p.What, d.Round(time.Second), p.path)
		}
	})
	if p.err != nil {
		p.Unavailable(t, p.err)
	}
	return p.path
}

// Unavailable skips t, or fails it under CI=true, because the program
// cannot be had or run: err says why.
func (p *Program) Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s needed and not available under CI: %v", p.What, err)
		return
	}
	t.Skipf("skipped: this test needs %s, and %v (%s; under CI=true this fails)", p.What, err, p.Otherwise)
}
