package kubetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/freeze"
)

// readyTimeout bounds how long Start waits for /readyz.
const readyTimeout = 90 * time.Second

// Server is a kube-apiserver process run for a test. Its etcd outlives
// Stop, so a restarted server has the same objects.
type Server struct {
	// URL is the API server's address (https on loopback).
	URL string
	// Kubeconfig is a kubeconfig file for the server, with a bearer token
	// of a member of system:masters.
	Kubeconfig string
	// Config is the same as a client-go configuration.
	Config *rest.Config

	bin  string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	t    testing.TB
}

// Start builds (once, see Binary) and starts a kube-apiserver on a free
// loopback port with its own embedded etcd, and waits until it is ready.
// Everything is stopped when the test ends; the server's log is printed
// when the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	etcdURL := etcdtest.Start(t)
	port := etcdtest.FreePort(t)
	url := fmt.Sprintf("https://127.0.0.1:%d", port)

	certPEM, keyPEM, err := servingCert()
	if err != nil {
		t.Fatal(err)
	}
	saPub, saKey, err := serviceAccountKeys()
	if err != nil {
		t.Fatal(err)
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	files := map[string][]byte{
		"serving.crt": certPEM,
		"serving.key": keyPEM,
		"sa.pub":      saPub,
		"sa.key":      saKey,
		"tokens.csv":  fmt.Appendf(nil, "%s,admin,1,\"system:masters\"\n", token),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{
		URL: url,
		Config: &rest.Config{
			Host:            url,
			BearerToken:     token,
			TLSClientConfig: rest.TLSClientConfig{CAData: certPEM},
		},
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		bin:        bin,
		log:        filepath.Join(dir, "kube-apiserver.log"),
		t:          t,
		args: []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--tls-cert-file=" + filepath.Join(dir, "serving.crt"),
			"--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
			"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
			"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
			"--authorization-mode=AlwaysAllow",
			"--anonymous-auth=false",
			"--service-cluster-ip-range=10.96.0.0/16",
		},
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: certPEM}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, s.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			if data, err := os.ReadFile(s.log); err == nil {
				t.Logf("last lines of kube-apiserver's log:\n%s", tail(data, 30))
			}
		}
	})
	s.Restart()
	return s
}

// Restart starts the server again after Stop, with the same address,
// credentials and etcd, and waits until it is ready. It starts the server
// when it is not running.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("kubetest: Restart while the server runs; Stop it first")
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		kubeAPIServer.Unavailable(s.t, fmt.Errorf("starting %s: %w", s.bin, err))
	}
	start := time.Now()
	s.cmd = cmd
	s.done = make(chan struct{})
	go func(done chan struct{}) {
		cmd.Wait()
		close(done)
	}(s.done)
	if err := s.waitReady(); err != nil {
		data, _ := os.ReadFile(s.log)
		s.Stop()
		s.t.Fatalf("kube-apiserver did not become ready: %v\nlast lines of its log:\n%s", err, tail(data, 30))
	}
	s.t.Logf("kube-apiserver ready in %s at %s", time.Since(start).Round(time.Millisecond), s.URL)
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits for
// it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // in case it was paused
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Pause freezes the server (SIGSTOP) and returns once every thread of it
// is stopped: connections are still accepted by the kernel, but nothing
// answers. Resume undoes it.
func (s *Server) Pause() {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatal("kubetest: Pause of a stopped server")
	}
	if err := freeze.Stop(s.cmd.Process); err != nil {
		s.t.Fatal(err)
	}
}

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatal("kubetest: Resume of a stopped server")
	}
	if err := freeze.Continue(s.cmd.Process); err != nil {
		s.t.Fatal(err)
	}
}

// PID is the server process's id, 0 when it is stopped.
func (s *Server) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) waitReady() error {
	tlsCfg, err := rest.TLSConfigFor(s.Config)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	last := "no answer"
	for {
		select {
		case <-s.done:
			return fmt.Errorf("the process exited (%v)", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %s", readyTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+s.Config.BearerToken)
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Sprintf("/readyz: %s: %s", resp.Status, tail(body.Bytes(), 5))
	}
}

// servingCert makes a self-signed certificate for 127.0.0.1, used both as
// the server's certificate and as the clients' trusted root.
func servingCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kube-apiserver for tests"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// serviceAccountKeys makes the key pair that signs service account tokens.
func serviceAccountKeys() (pubPEM, keyPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
