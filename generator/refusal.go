package generator

import (
	"errors"

	"github.com/ckegen/ckegen/reason"
)

// Refusal is the reason code of a tick the generator refused with err:
// the one the daemon's status records, and every what-if and view that
// says why a plan stopped (a plan, resilience's recoveries, a forecast's
// event). It is "" for nil and for ErrNothingToDo, which refuse nothing.
func Refusal(err error) string {
	switch {
	case err == nil, errors.Is(err, ErrNothingToDo):
		return ""
	case errors.Is(err, ErrNotEnoughMachines):
		return reason.NotEnoughMachines
	case errors.Is(err, ErrTooManyNonExistent):
		return reason.TooManyNonExistent
	}
	return reason.GenerationError
}
