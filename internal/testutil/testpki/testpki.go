// Package testpki makes a throwaway certificate authority for tests: a CA,
// a server certificate for 127.0.0.1 and localhost, and a client
// certificate, as PEM in memory and in files in a test's temporary
// directory.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is one CA and the certificates it signed. The *File fields are paths;
// the others are the same PEM in memory.
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey                     string
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
}

// New makes a CA and its server and client certificates, valid for an
// hour, and writes them under t.TempDir().
func New(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ckegen test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, usage ...x509.ExtKeyUsage) (certPEM, keyPEM string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Minute),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return encode("CERTIFICATE", der), encode("EC PRIVATE KEY", kder)
	}
	p := &PKI{CA: encode("CERTIFICATE", caDER)}
	// etcd also dials itself with its server certificate, as a client.
	p.ServerCert, p.ServerKey = leaf(2, "server", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	p.ClientCert, p.ClientKey = leaf(3, "root", x509.ExtKeyUsageClientAuth)
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p.CAFile = write("ca.pem", p.CA)
	p.ServerCertFile = write("server.pem", p.ServerCert)
	p.ServerKeyFile = write("server-key.pem", p.ServerKey)
	p.ClientCertFile = write("client.pem", p.ClientCert)
	p.ClientKeyFile = write("client-key.pem", p.ClientKey)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encode(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}
