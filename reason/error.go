package reason

import (
	"errors"
)

// Error is a failed tick with its reason code.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Fail is the failure err with its reason code.
func Fail(code string, err error) *Error { return &Error{Reason: code, Err: err} }

// Of is the reason code of a tick's error ("" for nil, ETCD_ERROR
// for an error without one).
func Of(err error) string {
	var te *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		return te.Reason
	}
	return EtcdError
}
