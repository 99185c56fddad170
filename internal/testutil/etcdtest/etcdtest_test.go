package etcdtest

import "testing"

// TestFreePortUnique: no port is given out twice, even when the kernel
// hands the same one out again.
func TestFreePortUnique(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d given out twice", p)
		}
		seen[p] = true
	}
}
