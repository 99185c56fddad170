package storage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/clip"
)

// TestBoundWarnings: a status keeps the first MaxWarnings warnings, each
// bounded, and says how many more there were.
func TestBoundWarnings(t *testing.T) {
	if got := BoundWarnings(nil); got != nil {
		t.Errorf("no warnings: %q", got)
	}
	ws := make([]string, MaxWarnings+7)
	for i := range ws {
		ws[i] = fmt.Sprintf("warning %d", i)
	}
	ws[0] = strings.Repeat("x", 10*clip.MaxValue)
	got := BoundWarnings(ws)
	if len(got) != MaxWarnings+1 || got[MaxWarnings] != "and 7 more" || got[1] != "warning 1" {
		t.Fatalf("%d warnings kept, the last %q", len(got), got[len(got)-1])
	}
	if len(got[0]) > 2*clip.MaxValue+64 {
		t.Errorf("a long warning kept whole: %d bytes", len(got[0]))
	}
	if got := BoundWarnings(ws[:3]); len(got) != 3 || got[2] != "warning 2" {
		t.Errorf("three warnings: %q", got[1:])
	}
}
