package buildcache

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestKey: the key changes with the arguments and with each file, and is
// the same for the same inputs; its hashing is pinned, since changing it
// throws away every warm cache (minutes of builds in CI).
func TestKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n")
	write("go.sum", "")
	key := func(args ...string) string {
		k, err := Key(dir, args, "go.mod", "go.sum")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := key("build", "x")
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && first != "e1d6827e9707d776" {
		t.Errorf("key %s: the hashing changed; every cache entry will be rebuilt", first)
	}
	if again := key("build", "x"); again != first {
		t.Errorf("same inputs, keys %s and %s", first, again)
	}
	if key("build", "y") == first {
		t.Error("other arguments, same key")
	}
	write("go.sum", "m v1 h1:x\n")
	if key("build", "x") == first {
		t.Error("another go.sum, same key")
	}
	if _, err := Key(dir, nil, "missing"); err == nil {
		t.Error("a missing file gave a key")
	}
}

func TestDir(t *testing.T) {
	t.Setenv("CKEGEN_TEST_CACHE", "/x/y")
	if d, err := Dir("CKEGEN_TEST_CACHE", "n"); err != nil || d != "/x/y" {
		t.Errorf("Dir = %q, %v; want the variable's value", d, err)
	}
	t.Setenv("CKEGEN_TEST_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/c")
	if d, err := Dir("CKEGEN_TEST_CACHE", "n"); err != nil || d != "/c/ckegen/n" {
		t.Errorf("Dir = %q, %v; want /c/ckegen/n", d, err)
	}
}
