package listen

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestTCPInUse: an address another listener holds is refused with the
// flag to change; the error still says what listening said.
func TestTCPInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	ln, err := TCP("--http", addr, "a second ckegen")
	if err == nil {
		ln.Close()
		t.Fatalf("%s is held by this test, and TCP listened on it", addr)
	}
	want := "--http " + addr + ": address already in use: another process listens there (a second ckegen?); give --http another port"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	var iu *InUseError
	if !errors.As(err, &iu) || !InUse(err) {
		t.Errorf("%v: not an *InUseError wrapping EADDRINUSE", err)
	}
}

// TestTCPOtherErrors: another error is named by the flag and its value,
// and is no *InUseError.
func TestTCPOtherErrors(t *testing.T) {
	ln, err := TCP("--listen", "127.0.0.1:notaport", "a second fakesabakan")
	if err == nil {
		ln.Close()
		t.Fatal("a port that is no number was listened on")
	}
	var iu *InUseError
	if !strings.HasPrefix(err.Error(), "--listen 127.0.0.1:notaport: listen tcp") || errors.As(err, &iu) {
		t.Errorf("error %q: want it named by the flag, and no *InUseError", err)
	}
	ln, err = TCP("--listen", "127.0.0.1:0", "a second fakesabakan")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if Explain(nil, "--x", "y", "z") != nil {
		t.Error("Explain(nil) is not nil")
	}
}
