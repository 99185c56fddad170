package generator

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ckegen/ckegen/reason"
)

// TestRefusal: each refusal, wrapped or not, has the code the status
// records; what refuses nothing has none.
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{ErrNothingToDo, ""},
		{fmt.Errorf("rule 1: %w", ErrTooManyNonExistent), reason.TooManyNonExistent},
		{fmt.Errorf("fill: %w", ErrNotEnoughMachines), reason.NotEnoughMachines},
		{errors.New("template nodes[0]: broken"), reason.GenerationError},
	} {
		if got := Refusal(c.err); got != c.want {
			t.Errorf("Refusal(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
