package tlsfiles

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	if c, err := Config("", "", ""); c != nil || err != nil {
		t.Errorf("no files: %v, %v; want nil, nil", c, err)
	}
	ts := httptest.NewTLSServer(nil)
	defer ts.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Config(ca, "", "")
	if err != nil || c.RootCAs == nil || c.MinVersion == 0 {
		t.Errorf("CA file: %+v, %v", c, err)
	}
	notPEM := filepath.Join(dir, "x.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ca, cert, key, want string }{
		{"/nonexistent", "", "", "CA file: open /nonexistent"},
		{notPEM, "", "", "no PEM certificate found"},
		{"", "", "key.pem", "both the certificate and the key file are needed"},
		{"", "cert.pem", "", "both the certificate and the key file are needed"},
		{"", notPEM, notPEM, "client certificate:"},
	} {
		if _, err := Config(c.ca, c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Config(%q, %q, %q) = %v, want %q", c.ca, c.cert, c.key, err, c.want)
		}
	}
}
