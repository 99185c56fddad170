package etcdclient

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// TLS is the TLS of c, nil when it sets none: the CA from tls-ca-file or
// tls-ca, the client certificate from tls-cert-file and tls-key-file or
// from tls-cert and tls-key, as etcdutil reads them. It refuses what
// etcdutil would silently ignore or take for no TLS:
//
//   - a setting given both as a file and inline (etcdutil takes the file);
//   - half a client certificate, or a certificate file with an inline key
//     (etcdutil connects without one);
//   - a file that is empty, named (etcdutil would connect without TLS);
//   - a CA in which no PEM certificate is found;
//   - a certificate that does not go with its key.
func (c *Config) TLS() (*tls.Config, error) {
	for _, p := range [][2]string{{"tls-ca-file", "tls-ca"}, {"tls-cert-file", "tls-cert"}, {"tls-key-file", "tls-key"}} {
		if c.setting(p[0]) != "" && c.setting(p[1]) != "" {
			return nil, c.errorf(p[1], "%s and %s are both set: give one (a file name or the PEM itself)", p[0], p[1])
		}
	}
	hasCert, hasKey := c.TLSCertFile != "" || c.TLSCert != "", c.TLSKeyFile != "" || c.TLSKey != ""
	switch {
	case hasCert != hasKey:
		key := c.firstSet("tls-cert-file", "tls-cert", "tls-key-file", "tls-key")
		return nil, c.errorf(key, "a client certificate needs both the certificate (tls-cert-file or tls-cert) and its key (tls-key-file or tls-key); %s is alone", key)
	case (c.TLSCertFile != "") != (c.TLSKeyFile != ""):
		return nil, c.errorf(c.firstSet("tls-cert-file", "tls-key-file"),
			"tls-cert-file and tls-key-file go together, as do tls-cert and tls-key: give both as files or both inline")
	}
	ca, caKey, err := c.pem("tls-ca-file", "tls-ca")
	if err != nil {
		return nil, err
	}
	cert, certKey, err := c.pem("tls-cert-file", "tls-cert")
	if err != nil {
		return nil, err
	}
	key, _, err := c.pem("tls-key-file", "tls-key")
	if err != nil {
		return nil, err
	}
	if ca == nil && cert == nil {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != nil {
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, c.errorf(caKey, "%s: no PEM certificate found", c.describe(caKey))
		}
	}
	if cert != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, c.errorf(certKey, "client certificate (%s): %v", c.describe(certKey), err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// pem is the PEM of the file setting or else of the inline one, nil when
// neither is set, and which setting it came from.
func (c *Config) pem(fileKey, inlineKey string) ([]byte, string, error) {
	if file := c.setting(fileKey); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fileKey, c.errorf(fileKey, "%s: %v", fileKey, err)
		}
		if len(data) == 0 {
			return nil, fileKey, c.errorf(fileKey, "%s: %s is empty", fileKey, file)
		}
		return data, fileKey, nil
	}
	if inline := c.setting(inlineKey); inline != "" {
		return []byte(inline), inlineKey, nil
	}
	return nil, "", nil
}

// describe names a TLS setting in an error: the key, and the file for a
// file setting.
func (c *Config) describe(key string) string {
	switch key {
	case "tls-ca-file":
		return key + " " + c.TLSCAFile
	case "tls-cert-file":
		return "tls-cert-file " + c.TLSCertFile + ", tls-key-file " + c.TLSKeyFile
	case "tls-cert":
		return "tls-cert, tls-key"
	}
	return key
}

// setting is the value of one of the TLS keys.
func (c *Config) setting(key string) string {
	switch key {
	case "tls-ca-file":
		return c.TLSCAFile
	case "tls-ca":
		return c.TLSCA
	case "tls-cert-file":
		return c.TLSCertFile
	case "tls-cert":
		return c.TLSCert
	case "tls-key-file":
		return c.TLSKeyFile
	case "tls-key":
		return c.TLSKey
	}
	return ""
}

// firstSet is the first of keys that is set.
func (c *Config) firstSet(keys ...string) string {
	for _, k := range keys {
		if c.setting(k) != "" {
			return k
		}
	}
	return keys[0]
}
