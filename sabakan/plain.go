package sabakan

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
)

// Plain says what went wrong in an HTTP exchange in plain words, without
// the method, URL and addresses Go's errors wrap around the cause
// (`Post "http://...": dial tcp ...: connect: connection refused` is
// "connection refused"): the URL is named once by whoever says it.
func Plain(err error) string {
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	for _, c := range []struct {
		is   bool
		text string
	}{
		{errors.As(err, &dns) && dns.IsNotFound, "no such host"},
		{errors.Is(err, syscall.ECONNREFUSED), "connection refused"},
		{errors.Is(err, syscall.ECONNRESET), "connection reset"},
		{errors.Is(err, syscall.EHOSTUNREACH), "no route to host"},
		{errors.Is(err, syscall.ENETUNREACH), "network unreachable"},
		{errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err), "no answer in time"},
		{errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "connection closed before an answer"},
		{errors.As(err, &unknownCA), "TLS: certificate signed by an unknown authority"},
		{errors.As(err, &hostname), "TLS: the certificate is not for this host"},
		{errors.As(err, &invalid), "TLS: invalid certificate"},
		{errors.As(err, &record), "TLS: the server does not speak TLS"},
		{errors.As(err, &verify), "TLS: certificate not verified"},
	} {
		if c.is {
			return c.text
		}
	}
	// Something else: its own words, without what wraps them.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
