package sabakan

import (
	"errors"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// TestPlain: what wraps the cause of a failed HTTP exchange (the method,
// the URL, the dial and the addresses) is left out.
func TestPlain(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://sabakan:10080/graphql", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}), "connection refused"},
		{wrap(&os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}), "connection reset"},
		{wrap(&net.DNSError{Err: "no such host", Name: "sabakan", IsNotFound: true}), "no such host"},
		{wrap(os.ErrDeadlineExceeded), "no answer in time"},
		{&url.Error{Op: "Post", URL: "http://sabakan/graphql", Err: errors.New("unexpected EOF")}, "unexpected EOF"},
		{wrap(errors.New("something else")), "something else"},
	} {
		if got := Plain(c.err); got != c.want {
			t.Errorf("Plain(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
