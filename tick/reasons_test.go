package tick

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/ckegen/ckegen/reason"
)

// recorded are the (reason, result) pairs of every status the tests'
// ticks recorded.
var recorded = struct {
	sync.Mutex
	pairs map[[2]string]bool
}{pairs: map[[2]string]bool{}}

// record notes the reason and result of a status a test's tick recorded.
func record(code, result string) {
	if code == "" {
		return
	}
	recorded.Lock()
	defer recorded.Unlock()
	recorded.pairs[[2]string{code, result}] = true
}

// TestMain checks, after every test of the package ran, that each status
// a tick recorded has its reason under a result reason.Codes allows for
// it (which docs/daemon.md's table of reasons is checked against): the
// reason table says what the status does.
func TestMain(m *testing.M) {
	code := m.Run()
	recorded.Lock()
	var bad []string
	for p := range recorded.pairs {
		if !allows(p[0], p[1]) {
			bad = append(bad, fmt.Sprintf("%s recorded under %s", p[0], p[1]))
		}
	}
	recorded.Unlock()
	slices.Sort(bad)
	for _, b := range bad {
		fmt.Fprintf(os.Stderr, "FAIL: a status with reason %s: reason.Codes does not allow it\n", b)
	}
	if len(bad) > 0 && code == 0 {
		code = 1
	}
	os.Exit(code)
}

// allows reports whether reason.Codes lets a tick record code under
// result: its own result or one of its Also.
func allows(code, result string) bool {
	for _, c := range reason.Codes {
		if c.Code != code {
			continue
		}
		if c.Result == result {
			return true
		}
		for _, a := range c.Also {
			if a.Result == result {
				return true
			}
		}
	}
	return false
}
