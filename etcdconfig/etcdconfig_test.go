package etcdconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yml")
	if err := os.WriteFile(good, []byte("endpoints: [http://a:2379, http://b:2379]\nprefix: /x/\ntimeout: 3s\nusername: u\npassword: p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints) != 2 || c.Prefix != "/x/" || c.Timeout != "3s" || c.Username != "u" {
		t.Errorf("Load = %+v", c)
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("endpoint: [http://a:2379]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), `unknown field "endpoint"`) {
		t.Errorf("a misspelt field: %v", err)
	}
}

func TestClientErrors(t *testing.T) {
	cases := []struct {
		c    Config
		want string
	}{
		{Config{}, "no endpoints"},
		{Config{Endpoints: []string{"http://a"}, Timeout: "soon"}, "etcd timeout"},
		{Config{Endpoints: []string{"http://a"}, TLSCAFile: "/nonexistent"}, "etcd CA file"},
	}
	for _, c := range cases {
		if _, err := c.c.Client(nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
}
