// Package buildcache builds the programs the tests build from modules of
// their own (a kube-apiserver, CKE's cke and ckecli) into the user cache:
// built once, kept until the module, the build's arguments or another
// input named in the Spec change. Build does it for every user: the key,
// the lock that lets one process build while the others wait, the build
// into a temporary directory renamed into place when complete, and the
// environment (the module on its own, a file module proxy first).
package buildcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Spec is what Build builds, and what keys it.
type Spec struct {
	// Name says what is built, in messages: "the kube-apiserver".
	Name string
	// Cache names the cache directory, ckegen/Cache in the user cache;
	// the environment variable CacheEnv, when set, names another.
	Cache, CacheEnv string
	// Prefix starts the name of the cache entry, before the key (a
	// version, so that the entries say what they hold).
	Prefix string
	// Module is the directory of the module built. Its go.mod and go.sum
	// key the build.
	Module string
	// Packages are the main packages built (import paths, or "." for the
	// module's own) and Outputs the names of the programs, one for each.
	// One package is written under its output's name; several are written
	// into the entry's directory by one go build, each under the name go
	// build gives it, the last element of its import path.
	Packages, Outputs []string
	// Flags are go build's flags (-trimpath, -ldflags ...). They key the
	// build.
	Flags []string
	// KeyFiles are the module's other files that decide what is built
	// (main.go), relative to Module.
	KeyFiles []string
	// KeyTrees are directories whose packages also decide what is built,
	// as the repository root does for a module that replaces ckegen's
	// main module with it: see TreeFiles for the files that count.
	KeyTrees []string
	// FileProxy is a file module proxy put first in GOPROXY when the
	// directory exists (SharedGoProxy).
	FileProxy string
	// Env is added to go build's environment, after GOWORK=off and
	// GOFLAGS=-mod=readonly -buildvcs=false (the module on its own, its
	// go.mod and go.sum as committed).
	Env []string
	// Timeout bounds Build: waiting for another process's build of the
	// same entry, then building. Zero is no limit.
	Timeout time.Duration
	// Logf, when set, is told when Build starts to build or waits for
	// another process's build.
	Logf func(format string, args ...any)
}

// Build returns the cache entry of spec, a directory holding its Outputs,
// building them first when the entry is missing or incomplete. Other
// processes may want the same entry at the same time: one builds, the
// others wait for it.
func Build(spec Spec) (string, error) {
	if len(spec.Packages) == 0 || len(spec.Packages) != len(spec.Outputs) {
		return "", fmt.Errorf("%s: %d packages for %d outputs", spec.Name, len(spec.Packages), len(spec.Outputs))
	}
	entry, err := spec.Entry()
	if err != nil {
		return "", err
	}
	if complete(entry, spec.Outputs) {
		// Used now: prune keeps it for a while.
		now := time.Now()
		_ = os.Chtimes(entry, now, now)
		return entry, nil
	}
	ctx := context.Background()
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("no go command to build %s: %w", spec.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(ctx, entry+".lock", func() { spec.logf("another process is building %s into %s: waiting for it", spec.Name, entry) })
	if err != nil {
		return "", fmt.Errorf("%s: %w", spec.Name, err)
	}
	defer unlock()
	if complete(entry, spec.Outputs) {
		return entry, nil
	}
	spec.logf("building %s into %s", spec.Name, entry)
	tmp := entry + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	env, err := spec.env()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", spec.args(tmp)...)
	cmd.Dir = spec.Module
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	if err == nil && !complete(tmp, spec.Outputs) {
		err = fmt.Errorf("go build made no %s", strings.Join(spec.Outputs, " and "))
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("building %s in %s failed (limit %s): %w\n%s", spec.Name, spec.Module, spec.Timeout, err, Tail(out, 40))
	}
	os.RemoveAll(entry)
	if err := os.Rename(tmp, entry); err != nil {
		return "", err
	}
	prune(filepath.Dir(entry), spec.Prefix, keepEntries, keepFor, time.Now())
	return entry, nil
}

// An entry keyed by a tree (CKE's server with ckegen inside) is built
// again at every change of the repository: a cache keeps the keepEntries
// newest entries of a spec, and any used within keepFor (a test of an
// older tree may still be running one).
const (
	keepEntries = 3
	keepFor     = time.Hour
)

// prune removes from dir the entries named prefix+key beyond the keep
// newest, last built or used before now-within. What it cannot remove
// stays: the cache only grows then.
func prune(dir, prefix string, keep int, within time.Duration, now time.Time) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type entry struct {
		path string
		mod  time.Time
	}
	var es []entry
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() || !strings.HasPrefix(name, prefix) || strings.HasSuffix(name, ".tmp") {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		es = append(es, entry{filepath.Join(dir, name), fi.ModTime()})
	}
	slices.SortFunc(es, func(a, b entry) int { return b.mod.Compare(a.mod) })
	for i, e := range es {
		if i < keep || now.Sub(e.mod) < within {
			continue
		}
		// Under the entry's lock, as Build, so that no build or wait
		// of another process is cut short.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		unlock, err := lock(ctx, e.path+".lock", func() {})
		cancel()
		if err != nil {
			continue
		}
		os.RemoveAll(e.path)
		unlock()
	}
}

// Entry is the cache entry of spec: where its Outputs are, or will be.
func (s Spec) Entry() (string, error) {
	cache, err := Dir(s.CacheEnv, s.Cache)
	if err != nil {
		return "", err
	}
	key, err := s.Key()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, s.Prefix+key), nil
}

// Key names a build of spec: its go build command line, with the entry's
// directory written DIR, go.mod, go.sum and KeyFiles of the module, and
// TreeFiles of each KeyTrees directory.
func (s Spec) Key() (string, error) {
	return key(s.Module, s.args("DIR"), append([]string{"go.mod", "go.sum"}, s.KeyFiles...), s.KeyTrees)
}

// args are go build's arguments, writing into dir.
func (s Spec) args(dir string) []string {
	args := append([]string{"build"}, s.Flags...)
	if len(s.Packages) == 1 {
		return append(args, "-o", filepath.Join(dir, s.Outputs[0]), s.Packages[0])
	}
	return append(append(args, "-o", dir+string(filepath.Separator)), s.Packages...)
}

// Environ is the environment go runs with for s: the process's, with the
// file module proxy first in GOPROXY when it exists, and s.Env.
func (s Spec) Environ() ([]string, error) { return s.env() }

// env is go build's environment.
func (s Spec) env() ([]string, error) {
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	if s.FileProxy == "" {
		return append(env, s.Env...), nil
	}
	if fi, err := os.Stat(s.FileProxy); err != nil || !fi.IsDir() {
		return append(env, s.Env...), nil
	}
	proxy, err := filepath.Abs(s.FileProxy)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "env", "GOPROXY")
	cmd.Dir = s.Module
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOPROXY: %w", err)
	}
	env = append(env, "GOPROXY=file://"+filepath.ToSlash(proxy)+","+strings.TrimSpace(string(out)))
	return append(env, s.Env...), nil
}

func (s Spec) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// complete reports whether dir holds every output as a regular file.
func complete(dir string, outputs []string) bool {
	for _, name := range outputs {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// lock takes an exclusive lock on the file path, calling waiting once if
// another process holds it, until ctx is done.
func lock(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !told {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s: %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

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

// key is 16 hex digits of a SHA-256 of the platform, go's arguments args,
// the files of the module in dir that decide what is built (go.mod,
// go.sum, ...) and TreeFiles of each of trees. A change of any of them is
// a new key, so a stale build is never used.
func key(dir string, args, files, trees []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(h, "%q\n", args)
	for _, name := range files {
		if err := hashFile(h, filepath.Join(dir, name), name); err != nil {
			return "", err
		}
	}
	for i, tree := range trees {
		names, err := TreeFiles(tree)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "tree %d %d\n", i, len(names))
		for _, name := range names {
			if err := hashFile(h, filepath.Join(tree, filepath.FromSlash(name)), name); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// hashFile writes name, the size and the content of the file path into h.
func hashFile(h hash.Hash, path, name string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s %d\n", name, len(data))
	h.Write(data)
	return nil
}

// TreeFiles are the files under dir that can go into a build of the
// packages there, relative to dir with slashes, sorted: go.mod and go.sum
// at its top, and every file but tests (_test.go) in each directory that
// holds a Go file that is not a test, files a package embeds included.
// It leaves out what go leaves out of the module: directories named
// testdata or starting with "." or "_", and those of other modules (with
// a go.mod of their own).
func TreeFiles(dir string) ([]string, error) {
	var names []string
	for _, name := range []string{"go.mod", "go.sum"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			names = append(names, name)
		}
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != dir {
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		var files []string
		pkg := false
		for _, e := range entries {
			name := e.Name()
			if !e.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || (path == dir && (name == "go.mod" || name == "go.sum")) {
				continue
			}
			if strings.HasSuffix(name, ".go") {
				pkg = true
			}
			files = append(files, name)
		}
		if !pkg {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		for _, name := range files {
			names = append(names, filepath.ToSlash(filepath.Join(rel, name)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// RepoRoot is the directory of ckegen's main module, found from this
// source file.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the buildcache package's source")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("ckegen's go.mod is not at %s: %w", root, err)
	}
	return root, nil
}

// SharedGoProxy is ../shared/goproxy beside the repository, a file module
// proxy with module versions the usual proxy lacks (CKE v1.35.4), where
// CI lays it and so do the developers' machines. It may not exist.
func SharedGoProxy() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "..", "shared", "goproxy"), nil
}

// Tail is the last n lines of out.
func Tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
