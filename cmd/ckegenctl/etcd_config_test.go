package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// runCLIWithConfig runs ckegenctl with configFile in place of
// /etc/cke/config.yml.
func runCLIWithConfig(t *testing.T, configFile string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runWithConfig(configFile, args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// writeFileIn writes content to the file name in dir and returns its path.
func writeFileIn(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// etcdValue is the value of key, or "<none>".
func etcdValue(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<none>"
	}
	return string(resp.Kvs[0].Value)
}

// TestEtcdFlags: ckegenctl reaches etcd with the flags and the rules it
// shares with ckegen (internal/etcdclient, whose tests hold the rules): CKE's
// file by default, --config, --etcd-endpoints and --etcd-prefix or their
// older spellings --endpoints and --prefix, before or after the command.
// A bad file is refused naming --config, and nothing is written.
func TestEtcdFlags(t *testing.T) {
	live := etcdtest.Start(t)
	cli := etcdtest.Connect(t, live)
	dir := t.TempDir()
	dead := fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))
	dflt := writeFileIn(t, dir, "config.yml", "endpoints: ["+live+"]\nprefix: /dflt/\n")
	other := writeFileIn(t, dir, "other.yml", "endpoints: ["+live+"]\nprefix: /other/\n")
	deadFile := writeFileIn(t, dir, "dead.yml", "endpoints: ["+dead+"]\nprefix: /fromfile/\n")
	missing := filepath.Join(dir, "missing.yml")
	for i, c := range []struct {
		name        string
		defaultFile string
		args        []string
		key         string
	}{
		{"the default file when it exists", dflt, nil, "/dflt/sabakan/url"},
		{"--config instead of it", dflt, []string{"--config", other}, "/other/sabakan/url"},
		{"--etcd-endpoints over the file's, which keeps its prefix", deadFile, []string{"--etcd-endpoints", live}, "/fromfile/sabakan/url"},
		{"--etcd-prefix over the file's", dflt, []string{"--etcd-prefix", "/flag/"}, "/flag/sabakan/url"},
		{"--endpoints and --prefix", missing, []string{"--endpoints", live, "--prefix", "/old/"}, "/old/sabakan/url"},
	} {
		before, after := fmt.Sprintf("http://sabakan-%d/graphql", i), fmt.Sprintf("http://sabakan-%d-after/graphql", i)
		for want, args := range map[string][]string{
			before: append(append([]string{}, c.args...), "sabakan", "set-url", before),
			after:  append([]string{"sabakan", "set-url", after}, c.args...),
		} {
			out, errOut, code := runCLIWithConfig(t, c.defaultFile, args...)
			if code != 0 || out != "" || errOut != "" {
				t.Errorf("%s %v: exit %d, stdout %q, stderr %q", c.name, args, code, out, errOut)
			} else if got := etcdValue(t, cli, c.key); got != want {
				t.Errorf("%s %v: %s = %q, want %q", c.name, args, c.key, got, want)
			}
		}
	}

	bad := writeFileIn(t, dir, "bad.yml", "endpoints: ["+live+"]\ntls-ca-flie: ca.pem\n")
	for _, c := range []struct {
		defaultFile string
		args        []string
		want        string
		code        int
	}{
		{missing, []string{"--config", bad}, "ckegenctl: --config " + bad + `: line 2, column 1: unknown field "tls-ca-flie"; did you mean tls-ca-file?` + "\n", 1},
		{bad, nil, "ckegenctl: --config " + bad + `: line 2, column 1: unknown field "tls-ca-flie"; did you mean tls-ca-file?` + "\n", 1},
		{missing, []string{"--config", missing}, "ckegenctl: --config: open " + missing + ": no such file or directory\n", 1},
		{missing, []string{"--etcd-endpoints", live, "--timeout", "0s"}, "ckegenctl: --timeout: must be > 0, got 0s\n", 2},
		{missing, []string{"--etcd-endpoints", ","}, `ckegenctl: --etcd-endpoints: an empty endpoint in ",": want comma-separated URLs such as http://127.0.0.1:2379` + "\n", 2},
	} {
		out, errOut, code := runCLIWithConfig(t, c.defaultFile, append(c.args, "sabakan", "set-url", "http://refused")...)
		if code != c.code || out != "" || errOut != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
	resp, err := cli.Get(context.Background(), "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 5 {
		t.Errorf("%d keys, want the 5 URLs", resp.Count)
	}
}

// TestEtcdNotAnswering: ckegenctl says why etcd does not answer, as cke
// does: at once when nothing listens there, else within --timeout (or
// the file's timeout when shorter), naming it.
func TestEtcdNotAnswering(t *testing.T) {
	dir := t.TempDir()
	dead := fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))
	silent := etcdtest.Silent(t)
	silentCfg := writeFileIn(t, dir, "silent.yml", "endpoints: ["+silent+"]\ntimeout: 300ms\n")
	missing := filepath.Join(dir, "missing.yml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-endpoints", dead, "leader"}, "ckegenctl: etcd at " + dead + ": nothing listens there (dial tcp " + strings.TrimPrefix(dead, "http://") + ": connect: connection refused): " +
			"start etcd (ckegen runs an embedded one when given neither --config nor --etcd-endpoints), or point --etcd-endpoints or --config at a running one\n"},
		{[]string{"--config", silentCfg, "leader"}, "ckegenctl: etcd at " + silent + ": no answer within 300ms (timeout in " + silentCfg + "): context deadline exceeded while waiting for connections to become ready\n"},
		{[]string{"--etcd-endpoints", silent, "--timeout", "200ms", "leader"}, "ckegenctl: etcd at " + silent + ": no answer within 200ms (--timeout): context deadline exceeded while waiting for connections to become ready\n"},
	} {
		start := time.Now()
		out, errOut, code := runCLIWithConfig(t, missing, c.args...)
		if code != 1 || out != "" || errOut != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, errOut, c.want)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%v: took %s", c.args, d)
		}
	}
}

// TestDefaultConfigFileIsCKEs: ckegenctl as built reads CKE's file.
func TestDefaultConfigFileIsCKEs(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--help: exit %d, stderr %q", code, errb.String())
	}
	if want := `(default "/etc/cke/config.yml")`; !strings.Contains(out.String(), want) {
		t.Errorf("--help does not show the default configuration file %s:\n%s", want, out.String())
	}
}
