package etcdclient

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cybozu-go/etcdutil"
	"github.com/spf13/pflag"

	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/testutil/testpki"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// load parses args as a binary with the etcd flags would, with
// defaultFile as CKE's file and ckegenctl's aliases, and loads the
// configuration.
func load(t *testing.T, defaultFile string, args ...string) (*Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := Register(fs, Options{DefaultFile: defaultFile, Unconfigured: "http://127.0.0.1:2379", Aliases: true})
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return f.Load()
}

// TestLoad: where the settings come from. The file of --config, else the
// default file when it exists; then --etcd-endpoints and --etcd-prefix
// (or ckegenctl's --endpoints and --prefix) over the file's values, the
// file's other settings kept. With neither a file nor --etcd-endpoints,
// no etcd is configured: etcdutil's default endpoint.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	dflt := writeFile(t, dir, "config.yml", "endpoints: [http://10.0.0.1:2379]\nprefix: /dflt/\ntimeout: 5s\nusername: u\npassword: p\n")
	other := writeFile(t, dir, "other.yml", "endpoints: [http://10.0.0.2:2379, http://10.0.0.3:2379]\nprefix: /other/\n")
	empty := writeFile(t, dir, "empty.yml", "")
	missing := filepath.Join(dir, "missing.yml")
	for _, c := range []struct {
		name        string
		defaultFile string
		args        []string
		want        Config // lines are not compared
	}{
		{"nothing: not configured, etcdutil's default endpoint", missing, nil,
			Config{Config: cfg("http://127.0.0.1:2379", "/cke/", "", "")}},
		{"no default file at all", "", nil,
			Config{Config: cfg("http://127.0.0.1:2379", "/cke/", "", "")}},
		{"the default file when it exists", dflt, nil,
			Config{Config: cfg("http://10.0.0.1:2379", "/dflt/", "5s", "u"), File: dflt, Configured: true}},
		{"--config instead of the default file", dflt, []string{"--config", other},
			Config{Config: cfg("http://10.0.0.2:2379,http://10.0.0.3:2379", "/other/", "", ""), File: other, Configured: true}},
		{"--etcd-endpoints alone", missing, []string{"--etcd-endpoints", "http://a:2379, http://b:2379"},
			Config{Config: cfg("http://a:2379,http://b:2379", "/cke/", "", ""), Configured: true}},
		{"--etcd-endpoints over the default file, which keeps the rest", dflt, []string{"--etcd-endpoints", "http://a:2379"},
			Config{Config: cfg("http://a:2379", "/dflt/", "5s", "u"), File: dflt, Configured: true}},
		{"--etcd-prefix over the file's", dflt, []string{"--etcd-prefix", "/flag/"},
			Config{Config: cfg("http://10.0.0.1:2379", "/flag/", "5s", "u"), File: dflt, Configured: true}},
		{"--etcd-prefix alone configures no etcd", missing, []string{"--etcd-prefix", "/flag/"},
			Config{Config: cfg("http://127.0.0.1:2379", "/flag/", "", "")}},
		{"--endpoints and --prefix, ckegenctl's older spellings", dflt, []string{"--endpoints", "http://a:2379", "--prefix", "/old/"},
			Config{Config: cfg("http://a:2379", "/old/", "5s", "u"), File: dflt, Configured: true}},
		{"an empty file: etcdutil's defaults", missing, []string{"--config", empty},
			Config{Config: cfg("http://127.0.0.1:2379", "/cke/", "", ""), File: empty, Configured: true}},
	} {
		got, err := load(t, c.defaultFile, c.args...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !equal(*got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, *got, c.want)
		}
	}
}

// goType matches what Go writes of a type: Config.endpoints, []string,
// map[string]string, interface {}, struct field.
var goType = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\b[A-Z]\w*\.[a-z]\w*\b|\[\]|map\[|\bstruct\b|interface \{|Go (value|type|struct)`)

func cfg(endpoints, prefix, timeout, user string) (c etcdutil.Config) {
	c.Endpoints = strings.Split(endpoints, ",")
	c.Prefix, c.Timeout, c.Username = prefix, timeout, user
	return c
}

func equal(a, b Config) bool {
	return slices.Equal(a.Endpoints, b.Endpoints) && a.Prefix == b.Prefix && a.Timeout == b.Timeout && a.Username == b.Username &&
		a.File == b.File && a.Configured == b.Configured
}

// TestLoadErrors: a configuration that cannot be right is refused when it
// is read, naming the flag, or the file with the line and column of what
// is wrong, and what to do; on one line, in YAML's and JSON's words, never
// Go's.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t)
	missing := filepath.Join(dir, "missing.yml")
	good := "endpoints: [http://127.0.0.1:2379]\n"
	indent := func(pem string) string { return "  " + strings.ReplaceAll(strings.TrimSpace(pem), "\n", "\n  ") + "\n" }
	emptyPEM := writeFile(t, dir, "empty.pem", "")
	for i, c := range []struct {
		name        string
		defaultFile string // the file read without --config
		file        string // given with --config when not empty
		args        []string
		want        string // the error after "--config FILE: " for a file
	}{
		// Which file.
		{name: "a --config that does not exist", defaultFile: missing, args: []string{"--config", missing}, want: "--config: open " + missing + ": no such file or directory"},
		{name: "a default file that cannot be read", defaultFile: dir, want: "--config: read " + dir + ": is a directory"},
		// The YAML, each error with its line.
		{name: "YAML that does not parse", file: "endpoints: [http://a:2379\n", want: "line 1, column 12: not valid YAML: sequence end token ']' not found"},
		{name: "a key given twice", file: good + "prefix: /a/\nprefix: /b/\n", want: `line 3, column 1: duplicate key "prefix" (first at line 2, column 1)`},
		{name: "a misspelt key", file: good + "tls-ca-flie: x\n", want: `line 2, column 1: unknown field "tls-ca-flie"; did you mean tls-ca-file?`},
		{name: "an unknown key", file: good + "\nlisten: x\n", want: `line 3, column 1: unknown field "listen" (known fields: endpoints, prefix, timeout, username, password, tls-ca-file, tls-ca, tls-cert-file, tls-cert, tls-key-file, tls-key)`},
		{name: "a key in another case", file: good + "Prefix: /x/\n", want: `line 2, column 1: unknown field "Prefix"; did you mean prefix?`},
		{name: "a value of the wrong type", file: "prefix: /x/\nendpoints: http://a:2379\n", want: `line 2, column 12: endpoints: want an array of strings, got the string "http://a:2379"`},
		{name: "a list item of the wrong type", file: "endpoints: [http://a:2379, [http://b:2379]]\n", want: "line 1, column 28: endpoints[1]: want a string, got an array"},
		{name: "a list as a key", file: good + "? [x]\n: y\n", want: "line 2, column 3: not valid YAML: a mapping key must be a scalar (a string, a number, true or false), not a list or mapping"},
		{name: "not a mapping", file: "# CKE's\n- endpoints\n", want: "line 2, column 1: want an object of endpoints, prefix, timeout, username, password, tls-ca-file, tls-ca, tls-cert-file, tls-cert, tls-key-file, tls-key, got an array"},
		// The values.
		{name: "no endpoints", file: "endpoints: []\n", want: "line 1, column 12: endpoints: empty; give at least one URL such as https://10.0.0.1:2379"},
		{name: "an empty endpoint", file: "endpoints: [http://a:2379, '']\n", want: `line 1, column 12: endpoints: an empty endpoint in ["http://a:2379" ""]`},
		{name: "a timeout without unit", file: good + "timeout: 5\n", want: `line 2, column 10: timeout: want a positive duration such as 2s, got "5"`},
		{name: "a negative timeout", file: good + "timeout: -1s\n", want: `line 2, column 10: timeout: want a positive duration such as 2s, got "-1s"`},
		// TLS.
		{name: "the CA as a file and inline", file: good + "tls-ca-file: " + pki.CAFile + "\ntls-ca: x\n", want: "line 3, column 9: tls-ca-file and tls-ca are both set: give one (a file name or the PEM itself)"},
		{name: "the certificate as a file and inline", file: good + "tls-cert-file: " + pki.ClientCertFile + "\ntls-cert: x\ntls-key-file: " + pki.ClientKeyFile + "\n", want: "line 3, column 11: tls-cert-file and tls-cert are both set"},
		{name: "the key as a file and inline", file: good + "tls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + pki.ClientKeyFile + "\ntls-key: x\n", want: "line 4, column 10: tls-key-file and tls-key are both set"},
		{name: "a certificate without key", file: good + "tls-cert-file: " + pki.ClientCertFile + "\n", want: "line 2, column 16: a client certificate needs both the certificate (tls-cert-file or tls-cert) and its key (tls-key-file or tls-key); tls-cert-file is alone"},
		{name: "a key without certificate", file: good + "\ntls-key: x\n", want: "line 3, column 10: a client certificate needs both the certificate (tls-cert-file or tls-cert) and its key (tls-key-file or tls-key); tls-key is alone"},
		{name: "a file certificate with an inline key", file: good + "tls-key: |\n" + indent(pki.ClientKey) + "tls-cert-file: " + pki.ClientCertFile + "\n", want: "line 8, column 16: tls-cert-file and tls-key-file go together, as do tls-cert and tls-key: give both as files or both inline"},
		{name: "an empty CA file", file: good + "tls-ca-file: " + emptyPEM + "\n", want: "line 2, column 14: tls-ca-file: " + emptyPEM + " is empty"},
		{name: "an empty certificate file", file: good + "tls-cert-file: " + emptyPEM + "\ntls-key-file: " + pki.ClientKeyFile + "\n", want: "line 2, column 16: tls-cert-file: " + emptyPEM + " is empty"},
		{name: "an empty key file", file: good + "tls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + emptyPEM + "\n", want: "line 3, column 15: tls-key-file: " + emptyPEM + " is empty"},
		{name: "a CA file that does not exist", file: good + "tls-ca-file: /nonexistent/ca.pem\n", want: "line 2, column 14: tls-ca-file: open /nonexistent/ca.pem: no such file or directory"},
		{name: "an inline CA without a certificate", file: good + "tls-ca: not a certificate\n", want: "line 2, column 9: tls-ca: no PEM certificate found"},
		{name: "a CA file without a certificate", file: good + "tls-ca-file: " + pki.ClientKeyFile + "\n", want: "line 2, column 14: tls-ca-file " + pki.ClientKeyFile + ": no PEM certificate found"},
		{name: "a key that is not the certificate's", file: good + "tls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + pki.ServerKeyFile + "\n",
			want: "line 2, column 16: client certificate (tls-cert-file " + pki.ClientCertFile + ", tls-key-file " + pki.ServerKeyFile + "): tls: private key does not match public key"},
		{name: "an inline key that is not the certificate's", file: good + "tls-cert: |\n" + indent(pki.ClientCert) + "tls-key: |\n" + indent(pki.ServerKey),
			want: "line 2, column 11: client certificate (tls-cert, tls-key): tls: private key does not match public key"},
		// The flags.
		{name: "--etcd-endpoints empty", defaultFile: missing, args: []string{"--etcd-endpoints", ""}, want: `--etcd-endpoints: an empty endpoint in "": want comma-separated URLs such as http://127.0.0.1:2379`},
		{name: "--etcd-endpoints with an empty one", defaultFile: missing, args: []string{"--etcd-endpoints", "http://a:2379,,http://b:2379"}, want: `--etcd-endpoints: an empty endpoint in "http://a:2379,,http://b:2379"`},
		{name: "--endpoints without URL", defaultFile: missing, args: []string{"--endpoints", ","}, want: `--etcd-endpoints: an empty endpoint in ","`},
	} {
		args, want := c.args, c.want
		if c.file != "" {
			c.defaultFile = missing
			f := writeFile(t, dir, fmt.Sprintf("c%d.yml", i), c.file)
			args = append([]string{"--config", f}, args...)
			want = "--config " + f + ": " + want
		}
		_, err := load(t, c.defaultFile, args...)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v\nwant one line starting %q", c.name, err, want)
		}
		if err != nil && goType.MatchString(err.Error()) {
			t.Errorf("%s: %v names a Go type (%s)", c.name, err, goType.FindString(err.Error()))
		}
	}
}

// TestTLSMinVersion: the TLS of the file is TLS 1.2 at least.
func TestTLSMinVersion(t *testing.T) {
	pki := testpki.New(t)
	c := &Config{Config: cfg("https://a:2379", "/cke/", "", "")}
	c.TLSCAFile = pki.CAFile
	if tc, err := c.TLS(); err != nil || tc.MinVersion != tls.VersionTLS12 {
		t.Errorf("%+v, %v", tc, err)
	}
	if tc, err := (&Config{Config: cfg("http://a:2379", "/cke/", "", "")}).TLS(); err != nil || tc != nil {
		t.Errorf("no TLS settings: %+v, %v; want no TLS", tc, err)
	}
}

// TestErrorsWithoutFile: a configuration made by hand (no file) is
// checked by the same rules, without a file to name.
func TestErrorsWithoutFile(t *testing.T) {
	c := &Config{Config: cfg("http://a:2379", "/cke/", "", "")}
	c.TLSCert = "x"
	if _, err := c.TLS(); err == nil || !strings.HasPrefix(err.Error(), "a client certificate needs both") {
		t.Errorf("%v", err)
	}
	c.TLSCert, c.Timeout = "", "soon"
	if _, err := Connect(c); err == nil || err.Error() != `timeout: want a positive duration such as 2s, got "soon"` {
		t.Errorf("%v", err)
	}
}

// TestFlags: both binaries' flags, and ckegenctl's older spellings: hidden,
// the same values, and suggested for a typo of them.
func TestFlags(t *testing.T) {
	for _, aliases := range []bool{false, true} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		Register(fs, Options{DefaultFile: DefaultFile, Unconfigured: "run an embedded etcd", Aliases: aliases})
		usage := fs.FlagUsages()
		for _, want := range []string{
			`--config string`, `(default "/etc/cke/config.yml")`,
			"--etcd-endpoints string", "with neither a file nor this flag: run an embedded etcd",
			`--etcd-prefix string`, `(default "/cke/")`,
		} {
			if !strings.Contains(usage, want) {
				t.Errorf("aliases %v: the usage lacks %q:\n%s", aliases, want, usage)
			}
		}
		if strings.Contains(usage, "      --endpoints") || strings.Contains(usage, "      --prefix") {
			t.Errorf("aliases %v: an alias is listed:\n%s", aliases, usage)
		}
		if got := strings.Contains(usage, "(also --endpoints)") && strings.Contains(usage, "(also --prefix)"); got != aliases {
			t.Errorf("aliases %v: the usage names the aliases: %v\n%s", aliases, got, usage)
		}
		// A typo of an older spelling gets the older spelling; without
		// them, the flag whose last word it is.
		err := fs.Parse([]string{"--endpoint", "x"})
		want := "unknown flag: --endpoint; did you mean --etcd-endpoints?"
		if aliases {
			want = "unknown flag: --endpoint; did you mean --endpoints?"
		}
		if err == nil || suggest.FlagError(fs, err).Error() != want {
			t.Errorf("aliases %v: --endpoint: %v, want %q", aliases, suggest.FlagError(fs, err), want)
		}
		if err := fs.Parse([]string{"--prefx=/x/"}); aliases && (err == nil || suggest.FlagError(fs, err).Error() != "unknown flag: --prefx; did you mean --prefix?") {
			t.Errorf("--prefx: %v", suggest.FlagError(fs, err))
		}
	}
}
