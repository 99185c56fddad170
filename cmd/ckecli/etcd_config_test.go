package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/testpki"
)

// runCLIWithConfig runs ckecli with configFile in place of
// /etc/cke/config.yml.
func runCLIWithConfig(t *testing.T, configFile string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runWithConfig(configFile, args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func writeConfig(t *testing.T, dir, name, content string) string {
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

// TestConfigFile: where the etcd settings come from. The default file
// (/etc/cke/config.yml) when it exists and no --config is given, --config
// instead of it, the flags' defaults when neither exists; --endpoints and
// --prefix override the file's.
func TestConfigFile(t *testing.T) {
	live := etcdtest.Start(t)
	cli := etcdtest.Connect(t, live)
	dir := t.TempDir()
	dead := fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))
	dflt := writeConfig(t, dir, "config.yml", "endpoints: ["+live+"]\nprefix: /dflt/\n")
	other := writeConfig(t, dir, "other.yml", "endpoints: ["+live+"]\nprefix: /other/\n")
	deadFile := writeConfig(t, dir, "dead.yml", "endpoints: ["+dead+"]\nprefix: /fromfile/\ntimeout: 5s\n")
	missing := filepath.Join(dir, "missing.yml")
	cases := []struct {
		name        string
		defaultFile string
		args        []string
		key         string
	}{
		{"the default file when it exists", dflt, nil, "/dflt/sabakan/url"},
		{"--config instead of the default file", dflt, []string{"--config", other}, "/other/sabakan/url"},
		{"no file: the flags' defaults", missing, []string{"--endpoints", live}, "/cke/sabakan/url"},
		{"--prefix over the file's", dflt, []string{"--prefix", "/flag/"}, "/flag/sabakan/url"},
		{"--endpoints over the file's, which keeps its prefix", deadFile, []string{"--endpoints", live}, "/fromfile/sabakan/url"},
		{"flags after the command", missing, []string{"--prefix", "/late/"}, "/late/sabakan/url"},
	}
	for i, c := range cases {
		want := fmt.Sprintf("http://sabakan-%d/graphql", i)
		args := append(append([]string{}, c.args...), "sabakan", "set-url", want)
		if c.name == "flags after the command" {
			args = []string{"sabakan", "set-url", want, "--endpoints", live, "--prefix", "/late/"}
		}
		out, errOut, code := runCLIWithConfig(t, c.defaultFile, args...)
		if code != 0 || out != "" || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errOut)
			continue
		}
		if got := etcdValue(t, cli, c.key); got != want {
			t.Errorf("%s: %s = %q, want %q", c.name, c.key, got, want)
		}
	}
}

// TestConfigFileErrors: a configuration that cannot be right is refused
// before anything is sent to etcd, naming the field.
func TestConfigFileErrors(t *testing.T) {
	live := etcdtest.Start(t)
	cli := etcdtest.Connect(t, live)
	dir := t.TempDir()
	pki := testpki.New(t)
	missing := filepath.Join(dir, "missing.yml")
	good := "endpoints: [" + live + "]\n"
	cases := []struct {
		name        string
		defaultFile string // the file read without --config
		file        string // given with --config when not empty
		args        []string
		want        string
	}{
		{name: "a --config that does not exist", defaultFile: missing, args: []string{"--config", missing}, want: "--config: open " + missing},
		{name: "a default file that cannot be read", defaultFile: dir, want: "--config: read " + dir},
		{name: "a broken default file", defaultFile: writeConfig(t, dir, "broken.yml", good+"tls-ca-flie: x\n"), want: `unknown field "tls-ca-flie"`},
		{name: "a misspelt key", file: good + "prefx: /x/\n", want: `unknown field "prefx"`},
		{name: "a duplicate key", file: good + "prefix: /a/\nprefix: /b/\n", want: `"prefix"`},
		{name: "a timeout without unit", file: good + "timeout: 5\n", want: "timeout"},
		{name: "a negative timeout", file: good + "timeout: -1s\n", want: `timeout: must be a positive duration such as 2s, got "-1s"`},
		{name: "no endpoints", file: "endpoints: []\n", want: "endpoints: empty"},
		{name: "the CA twice", file: good + "tls-ca-file: " + pki.CAFile + "\ntls-ca: x\n", want: "tls-ca-file and tls-ca are both set"},
		{name: "a certificate without key", file: good + "tls-cert-file: " + pki.ClientCertFile + "\n", want: "needs both the certificate"},
		{name: "a key without certificate", file: good + "tls-key: x\n", want: "needs both the certificate"},
		{name: "a file certificate with an inline key", file: good + "tls-cert-file: " + pki.ClientCertFile + "\ntls-key: x\n", want: "tls-cert-file and tls-key-file go together"},
		{name: "an inline CA that is not PEM", file: good + "tls-ca: not a certificate\n", want: "tls-ca-file or tls-ca: no PEM certificate found"},
		{name: "a CA file that does not exist", file: good + "tls-ca-file: /nonexistent/ca.pem\n", want: "tls-ca-file: open /nonexistent/ca.pem"},
		{name: "an empty CA file", file: good + "tls-ca-file: " + writeConfig(t, dir, "empty.pem", "") + "\n", want: "empty.pem is empty"},
		{name: "a key that is not the certificate's", file: good + "tls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + pki.ServerKeyFile + "\n", want: "private key does not match public key"},
		{name: "--timeout 0", defaultFile: missing, args: []string{"--endpoints", live, "--timeout", "0s"}, want: "--timeout: must be > 0, got 0s"},
		{name: "--endpoints without URL", defaultFile: missing, args: []string{"--endpoints", ","}, want: `--endpoints: want comma-separated URLs`},
	}
	for i, c := range cases {
		args := c.args
		if c.file != "" {
			c.defaultFile = missing
			args = append([]string{"--config", writeConfig(t, dir, fmt.Sprintf("c%d.yml", i), c.file)}, args...)
		}
		args = append(args, "sabakan", "set-url", "http://sabakan")
		out, errOut, code := runCLIWithConfig(t, c.defaultFile, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line containing %q", c.name, code, out, errOut, c.want)
		}
	}
	resp, err := cli.Get(context.Background(), "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("refused configurations wrote %d keys", resp.Count)
	}
}

// startTLSEtcd starts an embedded etcd that serves clients over HTTPS and
// requires a client certificate signed by the test CA.
func startTLSEtcd(t *testing.T, pki *testpki.PKI) string {
	t.Helper()
	cu, _ := url.Parse(fmt.Sprintf("https://127.0.0.1:%d", etcdtest.FreePort(t)))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t)))
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.Name = "tls"
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile: pki.ServerCertFile, KeyFile: pki.ServerKeyFile,
		TrustedCAFile: pki.CAFile, ClientCertAuth: true,
	}
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatal(err)
	case <-time.After(60 * time.Second):
		t.Fatal("etcd with TLS did not start within 60s")
	}
	return cu.String()
}

// pemBlock makes PEM a YAML block scalar's body.
func pemBlock(pem string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(pem), "\n", "\n  ") + "\n"
}

// TestConfigTLS: CKE's TLS settings, as file names or as the PEM itself,
// reach an etcd that requires a client certificate.
func TestConfigTLS(t *testing.T) {
	pki := testpki.New(t)
	endpoint := startTLSEtcd(t, pki)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yml")
	head := "endpoints: [" + endpoint + "]\n"
	files := writeConfig(t, dir, "files.yml", head+"tls-ca-file: "+pki.CAFile+"\ntls-cert-file: "+pki.ClientCertFile+"\ntls-key-file: "+pki.ClientKeyFile+"\n")
	inline := writeConfig(t, dir, "inline.yml", head+"tls-ca: |\n"+pemBlock(pki.CA)+"tls-cert: |\n"+pemBlock(pki.ClientCert)+"tls-key: |\n"+pemBlock(pki.ClientKey))
	for _, c := range []struct{ name, config string }{{"files", files}, {"inline PEM", inline}} {
		want := "http://sabakan-" + strings.ReplaceAll(c.name, " ", "-") + "/graphql"
		if _, errOut, code := runCLIWithConfig(t, missing, "--config", c.config, "sabakan", "set-url", want); code != 0 {
			t.Errorf("%s: set-url: exit %d, stderr %q", c.name, code, errOut)
			continue
		}
		// The default file, read with no --config, carries the same settings.
		out, errOut, code := runCLIWithConfig(t, c.config, "sabakan", "get-url")
		if code != 0 || out != want+"\n" {
			t.Errorf("%s: get-url: exit %d, stdout %q, stderr %q; want %q", c.name, code, out, errOut, want)
		}
	}

	// Without the client certificate, or trusting another CA, etcd does
	// not let the command in.
	other := testpki.New(t)
	for _, c := range []struct{ name, config, why string }{
		// The server's refusal reaches the client as an alert or as a closed
		// connection, depending on timing.
		{"no client certificate", head + "tls-ca-file: " + pki.CAFile + "\ntimeout: 500ms\n", ""},
		{"another CA", head + "tls-ca-file: " + other.CAFile + "\ntls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + pki.ClientKeyFile + "\ntimeout: 500ms\n", "certificate signed by unknown authority"},
	} {
		cfg := writeConfig(t, dir, strings.ReplaceAll(c.name, " ", "-")+".yml", c.config)
		out, errOut, code := runCLIWithConfig(t, missing, "--config", cfg, "--timeout", "5s", "sabakan", "get-url")
		want := "ckecli: etcd at " + endpoint + ": no answer within 500ms (timeout in " + cfg + "): "
		if code != 1 || out != "" || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, c.why) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q with the cause %q", c.name, code, out, errOut, want, c.why)
		}
	}
}

// TestConfigAuth: the username and password of the file log in to an etcd
// with authentication; a wrong password is an error that says so.
func TestConfigAuth(t *testing.T) {
	live := etcdtest.Start(t)
	cli := etcdtest.Connect(t, live)
	ctx := context.Background()
	if _, err := cli.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yml")
	good := writeConfig(t, dir, "good.yml", "endpoints: ["+live+"]\nusername: root\npassword: s3cret\n")
	bad := writeConfig(t, dir, "bad.yml", "endpoints: ["+live+"]\nusername: root\npassword: wrong\n")
	if _, errOut, code := runCLIWithConfig(t, missing, "--config", good, "sabakan", "set-url", "http://s"); code != 0 {
		t.Errorf("with the password: exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := runCLIWithConfig(t, missing, "--config", good, "sabakan", "get-url"); code != 0 || out != "http://s/graphql\n" {
		t.Errorf("with the password: get-url exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The built binary: the etcd client logs to the process's stderr,
	// which only a process shows.
	out, errOut, code := runBinary(t, buildCLI(t), "--config", bad, "sabakan", "get-url")
	want := "ckecli: etcd at " + live + ": etcdserver: authentication failed, invalid user ID or password\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("with a wrong password: exit %d, stdout %q, stderr %q; want exit 1 and only %q", code, out, errOut, want)
	}
}

// TestConfigTimeout: an etcd that does not answer is named, with the
// timeout that ran out: the file's dial timeout, or --timeout when it is
// shorter. An endpoint where nothing listens fails at once, whatever the
// timeouts.
func TestConfigTimeout(t *testing.T) {
	dir := t.TempDir()
	dead := fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))
	cfg := writeConfig(t, dir, "dead.yml", "endpoints: ["+dead+"]\ntimeout: 300ms\n")
	// An etcd that takes connections and says nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	silent := "http://" + ln.Addr().String()
	silentCfg := writeConfig(t, dir, "silent.yml", "endpoints: ["+silent+"]\ntimeout: 300ms\n")
	refused := "ckecli: etcd at " + dead + ": nothing listens there (dial tcp " + strings.TrimPrefix(dead, "http://") + ": connect: connection refused): " +
		"start etcd (cke runs an embedded one when given no --etcd-endpoints) or point --endpoints or --config at a running one\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"leader"}, refused},
		{[]string{"--timeout", "200ms", "leader"}, refused},
		{[]string{"--config", silentCfg, "leader"}, "ckecli: etcd at " + silent + ": no answer within 300ms (timeout in " + silentCfg + "): context deadline exceeded while waiting for connections to become ready\n"},
		{[]string{"--endpoints", silent, "--timeout", "200ms", "leader"}, "ckecli: etcd at " + silent + ": no answer within 200ms (--timeout): context deadline exceeded while waiting for connections to become ready\n"},
	} {
		start := time.Now()
		out, errOut, code := runCLIWithConfig(t, cfg, c.args...)
		if code != 1 || out != "" || errOut != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, errOut, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %s", c.args, d)
		}
	}
}

// TestDefaultConfigFileIsCKEs: ckecli as built reads CKE's file.
func TestDefaultConfigFileIsCKEs(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--help: exit %d, stderr %q", code, errb.String())
	}
	if want := `(default "/etc/cke/config.yml")`; !strings.Contains(out.String(), want) {
		t.Errorf("--help does not show the default configuration file %s:\n%s", want, out.String())
	}
}
