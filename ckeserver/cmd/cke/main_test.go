package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goType matches what Go writes of a type: etcdutil.Config,
// Config.endpoints, []string, map[string]any, interface {}.
var goType = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\b[A-Z]\w*\.[a-z]\w*\b|\[\]|map\[|\bstruct\b|interface \{|Go (value|type|struct)`)

// TestLoadConfig: CKE's configuration file is read as CKE's server reads
// it (a key it does not know is left alone), and every error says where,
// by line and column, in YAML's and JSON's words.
func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		p := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write("endpoints: [http://10.0.0.1:2379]\nprefix: /x/\nunknown: 1\npassword: 1234\n")
	cfg, timeout, err := loadConfig(p)
	if err != nil || cfg.Endpoints[0] != "http://10.0.0.1:2379" || cfg.Prefix != "/x/" || cfg.Password != "1234" || timeout.String() != "2s" {
		t.Errorf("%+v, %s, %v", cfg, timeout, err)
	}
	for _, c := range []struct{ content, want string }{
		{"endpoints: http://10.0.0.1:2379\n", `line 1, column 12: endpoints: want an array of strings, got the string "http://10.0.0.1:2379"`},
		{"endpoints: [a]\ntimeout: [1]\n", "line 2, column 10: timeout: want a string, got an array"},
		{"endpoints: [a]\ntimeout: soon\n", `line 2, column 10: timeout: want a duration such as 2s, got "soon"`},
		{"endpoints: [a]\nprefix: /a/\nprefix: /b/\n", `line 3, column 1: duplicate key "prefix" (first at line 2, column 1)`},
		{"endpoints: [a\n", "line 1, column 12: not valid YAML: sequence end token ']' not found"},
		{"endpoints: [a]\n? [x]\n: y\n", "line 2, column 3: not valid YAML: a mapping key must be a scalar"},
		{"- a\n", "line 1, column 1: want an object of endpoints, prefix"},
	} {
		p := write(c.content)
		_, _, err := loadConfig(p)
		if want := "--config " + p + ": " + c.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", c.content, err, want)
		}
		if err != nil && goType.MatchString(err.Error()) {
			t.Errorf("%q: %v names a Go type", c.content, err)
		}
	}
}

// TestHTTPInUse: an --http address another process holds is refused,
// before etcd is reached, naming the flag to change.
func TestHTTPInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	config := filepath.Join(t.TempDir(), "config.yml")
	// An etcd where nothing listens: reaching it would fail otherwise.
	if err := os.WriteFile(config, []byte("endpoints: [http://127.0.0.1:1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oldHTTP, oldConfig := *flgHTTP, *flgConfigPath
	t.Cleanup(func() { *flgHTTP, *flgConfigPath = oldHTTP, oldConfig })
	*flgHTTP, *flgConfigPath = busy.Addr().String(), config
	d, err := parseDurations()
	if err != nil {
		t.Fatal(err)
	}
	err = run(d)
	want := "--http " + busy.Addr().String() + ": address already in use: another process listens there (a second cke?); give --http another port"
	if err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// TestParseFlags: an unknown flag gets a "did you mean", an argument is
// refused; both are the errors main exits 2 on.
func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--intervl", "1m"}, "unknown flag: --intervl; did you mean --interval?"},
		{[]string{"--sesion-tll", "1m"}, "unknown flag: --sesion-tll; did you mean --session-ttl?"},
		{[]string{"--lgofile", "x"}, "unknown flag: --lgofile; did you mean --logfile?"},
		{[]string{"-http", "x"}, "flags take two dashes: did you mean --http?"},
		{[]string{"extra"}, `unexpected arguments ["extra"]: cke takes only flags`},
		{[]string{"--interval", "0"}, `--interval: want a positive duration such as 1m, got "0"`},
	} {
		_, err := parseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
		*flgInterval = "1m"
	}
}
