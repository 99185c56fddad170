// Package buildcache names the user-cache entries of the programs the tests
// build from modules of their own (a kube-apiserver, CKE's cke and ckecli):
// built once, kept until the module or the build's arguments change.
package buildcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Dir is the cache directory of name: the value of the environment
// variable env when set, else ckegen/name in the user cache directory.
func Dir(env, name string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set %s): %w", env, err)
	}
	return filepath.Join(c, "ckegen", name), nil
}

// Key names a build of the module in dir with go's arguments args: 16 hex
// digits of a SHA-256 of the platform, the arguments and the files of the
// module that decide what is built (go.mod, go.sum, ...). A change of any
// of them is a new key, so a stale build is never used.
func Key(dir string, args []string, files ...string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(h, "%q\n", args)
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
