// Package listen opens the listeners of ckegen's binaries, each the value
// of a flag, and says which flag to change when another process has the
// address:
//
//	--http 127.0.0.1:10190: address already in use: another process listens there (a second ckegen?); give --http another port
package listen

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// InUseError is an address, the value of a flag, that another process
// listens on.
type InUseError struct {
	// Flag and Value are the flag that gave the address and its value:
	// "--http", "127.0.0.1:10190".
	Flag, Value string
	// Who is who most likely listens there, for the message: "a second
	// ckegen".
	Who string
	// Err is the error of listening.
	Err error
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s %s: address already in use: another process listens there (%s?); give %s another port", e.Flag, e.Value, e.Who, e.Flag)
}

func (e *InUseError) Unwrap() error { return e.Err }

// InUse reports whether err says that an address is in use.
func InUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

// Explain is err, an error of listening on value, the value of flag: an
// *InUseError when the address is in use, else err named by the flag
// ("--http 127.0.0.1:80: listen tcp 127.0.0.1:80: bind: permission
// denied"). who is who most likely listens there. nil stays nil.
func Explain(err error, flag, value, who string) error {
	switch {
	case err == nil:
		return nil
	case InUse(err):
		return &InUseError{Flag: flag, Value: value, Who: who, Err: err}
	}
	return fmt.Errorf("%s %s: %w", flag, value, err)
}

// TCP listens on addr, the value of flag; its error is Explain's.
func TCP(flag, addr, who string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, Explain(err, flag, addr, who)
	}
	return ln, nil
}
