package etcdclient

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/testpki"
)

// connectTo loads the configuration of args (no default file) and
// connects, waiting for etcd.
func connectTo(t *testing.T, args []string, opts ...Option) (*Client, error) {
	t.Helper()
	cfg, err := load(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := Connect(cfg, opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cli.Close() })
	return cli, cli.WaitReady(context.Background())
}

// put writes a key through cli.
func put(cli *Client, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cli.Put(ctx, "/cke/k", value)
	return err
}

// TestTLS: CKE's TLS settings, as file names or as the PEM itself, reach
// an etcd that requires a client certificate; without one, or trusting
// another CA, the connection fails, saying why.
func TestTLS(t *testing.T) {
	pki := testpki.New(t)
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", etcdtest.FreePort(t))
	etcdtest.StartServer(t, embedded.Options{ClientURL: endpoint, ClientTLS: transport.TLSInfo{
		CertFile: pki.ServerCertFile, KeyFile: pki.ServerKeyFile, TrustedCAFile: pki.CAFile, ClientCertAuth: true,
	}})
	dir := t.TempDir()
	indent := func(pem string) string { return "  " + strings.ReplaceAll(strings.TrimSpace(pem), "\n", "\n  ") + "\n" }
	head := "endpoints: [" + endpoint + "]\n"
	for name, content := range map[string]string{
		"files":  head + "tls-ca-file: " + pki.CAFile + "\ntls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + pki.ClientKeyFile + "\n",
		"inline": head + "tls-ca: |\n" + indent(pki.CA) + "tls-cert: |\n" + indent(pki.ClientCert) + "tls-key: |\n" + indent(pki.ClientKey),
	} {
		cli, err := connectTo(t, []string{"--config", writeFile(t, dir, name+".yml", content)})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := put(cli, name); err != nil {
			t.Errorf("%s: put over TLS: %v", name, err)
		}
	}

	other := testpki.New(t)
	for _, c := range []struct{ name, config, why string }{
		// The server's refusal reaches the client as an alert or as a
		// closed connection, depending on timing.
		{"no client certificate", head + "tls-ca-file: " + pki.CAFile + "\ntimeout: 500ms\n", ""},
		{"another CA", head + "tls-ca-file: " + other.CAFile + "\ntls-cert-file: " + pki.ClientCertFile + "\ntls-key-file: " + pki.ClientKeyFile + "\ntimeout: 500ms\n",
			"certificate signed by unknown authority"},
	} {
		file := writeFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".yml", c.config)
		_, err := connectTo(t, []string{"--config", file}, Within(5*time.Second, "--timeout"))
		want := "etcd at " + endpoint + ": no answer within 500ms (timeout in " + file + "): "
		var na *NoAnswerError
		if !errors.As(err, &na) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v; want %q with the cause %q", c.name, err, want, c.why)
		}
	}
}

// TestAuth: the username and password of the file log in to an etcd with
// authentication; a wrong password is an error that says so.
func TestAuth(t *testing.T) {
	url := etcdtest.Start(t)
	root := etcdtest.Connect(t, url)
	ctx := context.Background()
	if _, err := root.UserAdd(ctx, "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yml", "endpoints: ["+url+"]\nusername: root\npassword: s3cret\n")
	bad := writeFile(t, dir, "bad.yml", "endpoints: ["+url+"]\nusername: root\npassword: wrong\n")
	if cli, err := connectTo(t, []string{"--config", good}); err != nil {
		t.Errorf("with the password: %v", err)
	} else if err := put(cli, "v"); err != nil {
		t.Errorf("with the password: put: %v", err)
	}
	_, err := connectTo(t, []string{"--config", bad})
	if want := "etcd at " + url + ": etcdserver: authentication failed, invalid user ID or password"; err == nil || err.Error() != want {
		t.Errorf("with a wrong password: %v, want %q", err, want)
	}
}

// TestWaitReady: an etcd that does not answer is named, with the timeout
// that ran out and what set it: the file's dial timeout, Within's when it
// is shorter or the file sets none, else etcdutil's default of 2s. An
// endpoint where nothing listens fails at once, whatever the timeouts,
// saying what to do.
func TestWaitReady(t *testing.T) {
	dir := t.TempDir()
	dead := fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))
	silent := etcdtest.Silent(t)
	silentCfg := writeFile(t, dir, "silent.yml", "endpoints: ["+silent+"]\ntimeout: 300ms\n")
	deadCfg := writeFile(t, dir, "dead.yml", "endpoints: ["+dead+"]\ntimeout: 300ms\n")
	refused := "etcd at " + dead + ": nothing listens there (dial tcp " + strings.TrimPrefix(dead, "http://") + ": connect: connection refused): " +
		"start etcd (ckegen runs an embedded one when given neither --config nor --etcd-endpoints), or point --etcd-endpoints or --config at a running one"
	notReady := ": context deadline exceeded while waiting for connections to become ready"
	for _, c := range []struct {
		args   []string
		within time.Duration
		want   string
		took   time.Duration // at least
	}{
		{[]string{"--etcd-endpoints", dead}, 10 * time.Second, refused, 0},
		{[]string{"--config", deadCfg}, 0, refused, 0},
		{[]string{"--config", silentCfg}, 10 * time.Second, "etcd at " + silent + ": no answer within 300ms (timeout in " + silentCfg + ")" + notReady, 300 * time.Millisecond},
		{[]string{"--config", silentCfg}, 200 * time.Millisecond, "etcd at " + silent + ": no answer within 200ms (--timeout)" + notReady, 200 * time.Millisecond},
		{[]string{"--etcd-endpoints", silent}, 200 * time.Millisecond, "etcd at " + silent + ": no answer within 200ms (--timeout)" + notReady, 200 * time.Millisecond},
		{[]string{"--etcd-endpoints", silent}, 0, "etcd at " + silent + ": no answer within 2s (the default dial timeout)" + notReady, 2 * time.Second},
	} {
		var opts []Option
		if c.within > 0 {
			opts = append(opts, Within(c.within, "--timeout"))
		}
		start := time.Now()
		_, err := connectTo(t, c.args, opts...)
		took := time.Since(start)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v within %s: %v\nwant %q", c.args, c.within, err, c.want)
		}
		if c.want == refused && !errors.Is(err, ErrRefused) {
			t.Errorf("%v: %v is not ErrRefused", c.args, err)
		}
		if took < c.took || took > c.took+3*time.Second {
			t.Errorf("%v within %s: failed after %s, want %s to %s", c.args, c.within, took, c.took, c.took+3*time.Second)
		}
	}

	// A live etcd is ready at once.
	if _, err := connectTo(t, []string{"--etcd-endpoints", etcdtest.Start(t)}); err != nil {
		t.Errorf("a live etcd: %v", err)
	}
}

// TestMaxRequestBytes: a request over the etcd client's default limit
// (2 MiB) is sent when MaxRequestBytes allows it, and only then.
func TestMaxRequestBytes(t *testing.T) {
	_, url := etcdtest.StartServer(t, embedded.Options{MaxRequestBytes: 8 << 20})
	big := strings.Repeat("x", 6000000)
	cli, err := connectTo(t, []string{"--etcd-endpoints", url}, MaxRequestBytes(6000000+64<<10))
	if err != nil {
		t.Fatal(err)
	}
	if err := put(cli, big); err != nil {
		t.Errorf("a 6 MB write with MaxRequestBytes: %v", err)
	}
	cli, err = connectTo(t, []string{"--etcd-endpoints", url})
	if err != nil {
		t.Fatal(err)
	}
	if err := put(cli, big); err == nil || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("a 6 MB write without MaxRequestBytes: %v, want the client's limit", err)
	}
}

// TestLogger: the etcd client's own log lines go to Logger, and nowhere
// without it (the etcd client's default logger writes to stderr).
func TestLogger(t *testing.T) {
	url := etcdtest.Start(t)
	cfg, err := load(t, filepath.Join(t.TempDir(), "missing.yml"), "--etcd-endpoints", url)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := Connect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if cli.GetLogger().Core().Enabled(zapcore.ErrorLevel) {
		t.Error("without Logger, the etcd client logs")
	}
	lg := zap.NewExample()
	cli2, err := Connect(cfg, Logger(lg))
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	if cli2.GetLogger() != lg {
		t.Error("the etcd client does not log through Logger")
	}
}
