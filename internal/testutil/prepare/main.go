// Command prepare builds, before make test's tests start, what they run
// for real and what takes minutes to build cold, so that no test waits for
// a build within go test's time limit:
//
//   - the kube-apiserver (internal/testutil/kubetest runs it), for
//     kubenodes/, daemon/ and mtest;
//   - CKE v1.35.4's own cke and ckecli (internal/testutil/cketest), for
//     mtest's TestBesideCKE;
//   - CKE v1.35.4's server with ckegen inside (ckeserver/), for mtest's
//     TestInsideCKE and the scenarios after it;
//   - OpenBao's bao, a Vault (internal/testutil/vaulttest), for mtest's
//     TestInsideCKEVault: built from the source archive beside the
//     repository, ../shared/openbao;
//   - the previous release's ckegen, ckegenctl and cke, built from its
//     commit (mtest/testdata/previous-release), for mtest's rolling
//     upgrade and rollback;
//   - the container image's static binaries, built as make image builds
//     them (CGO_ENABLED=0, -trimpath: nothing shared with the other
//     builds), so that deploy's TestImage builds them from a warm cache.
//
// The first six (internal/testutil/buildcache/programs) are kept in the
// user cache and reused while their inputs do not change; the last warms
// Go's build cache. It imports nothing heavy, so that it starts within
// seconds on a cold build cache. Each has its own time
// limit. When one cannot be had, it says so and goes on, and the tests
// that need it skip with the reason; under CI=true it fails.
//
//	go run ./internal/testutil/prepare    (make test runs it first)
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
)

// step is one thing to prepare.
type step struct {
	// what is prepared, and how long it takes cold.
	what, cold string
	// prepare does it, telling logf when it builds or waits, and returns
	// where the result is.
	prepare func(logf func(string, ...any)) (string, error)
	// without is what happens without it, and how to have it otherwise.
	without string
}

// imageBuilds are how make image builds the image's binaries (Makefile,
// build-binaries), less the linker's flags, which do not change what Go
// caches: the module's directory, the environment, flags and packages of
// each go build.
var imageBuilds = []imageBuild{
	{env: []string{"CGO_ENABLED=0"}, flags: []string{"-trimpath"}, packages: []string{"./cmd/ckegen", "./cmd/ckegenctl"}},
	{dir: "ckeserver", cke: true, env: []string{"CGO_ENABLED=0"}, flags: []string{"-trimpath"}, packages: []string{"./cmd/cke"}},
}

type imageBuild struct {
	dir                  string // "": the repository's root
	cke                  bool   // with CKE from the shared module proxy, as $(CKEREF_ENV)
	env, flags, packages []string
}

// imageTimeout bounds the build of the image's binaries.
const imageTimeout = 45 * time.Minute

func steps() []step {
	return []step{{
		what: "the kube-apiserver", cold: "several minutes",
		prepare: programs.KubeAPIServer,
		without: "kubenodes/, daemon/ and mtest's tests that need it skip; set " + programs.EnvKubeAPIServer + " to a built binary, or make the Go module proxy reachable",
	}, {
		what: "CKE " + programs.CKEVersion + "'s cke and ckecli", cold: "several minutes",
		prepare: programs.CKE,
		without: "mtest's TestBesideCKE skips; set " + programs.EnvCKEBinDir + " to a directory holding both, or make github.com/cybozu-go/cke " + programs.CKEVersion + " downloadable (../shared/goproxy or the Go module proxy)",
	}, {
		what: "CKE " + programs.CKEVersion + "'s server with ckegen inside (cke, ckeserver/)", cold: "several minutes; again whenever ckegen's packages change, seconds warm",
		prepare: programs.Inside,
		without: "mtest's TestInsideCKE skips; set " + programs.EnvInsideBinary + " to a built binary, or make github.com/cybozu-go/cke " + programs.CKEVersion + " downloadable (../shared/goproxy or the Go module proxy)",
	}, {
		what: "OpenBao " + programs.OpenBaoVersion + "'s bao, the tests' Vault", cold: "about 20 minutes",
		prepare: programs.OpenBao,
		without: "mtest's TestInsideCKEVault and vaulttest's tests skip; set " + programs.EnvOpenBao + " to a built bao, or lay OpenBao's source archive beside the repository (../shared/openbao)",
	}, {
		what: "the previous release's ckegen and ckegenctl (" + programs.PreviousRecord + ")", cold: "a minute or two",
		prepare: programs.PreviousDaemons,
		without: "mtest's TestRollingUpgrade skips; fetch the repository's history (git fetch --unshallow) so that the previous release's commit is in it",
	}, {
		what: "the previous release's cke (CKE's server with ckegen inside, " + programs.PreviousRecord + ")", cold: "several minutes; a minute or two once the tree's cke is built",
		prepare: programs.PreviousInside,
		without: "mtest's TestRollingUpgradeInsideCKE skips; fetch the repository's history (git fetch --unshallow), and make github.com/cybozu-go/cke " + programs.CKEVersion + " downloadable",
	}, {
		what: "the container image's static binaries", cold: "a few minutes",
		prepare: buildImageBinaries,
		without: "deploy's TestImage builds them within its own time limit",
	}}
}

func main() {
	ci := os.Getenv("CI") == "true"
	start := time.Now()
	failed := false
	for _, s := range steps() {
		if !run(os.Stdout, s, ci) {
			failed = true
		}
	}
	if failed {
		fmt.Printf("prepare: FAILED after %s: under CI=true every program the tests run must be had\n", since(start))
		os.Exit(1)
	}
	fmt.Printf("prepare: done in %s\n", since(start))
}

// progressEvery is how often a build that is under way says so.
var progressEvery = time.Minute

// run prepares s, saying what it does on out, and reports false when it
// could not, under CI.
func run(out io.Writer, s step, ci bool) bool {
	var (
		mu    sync.Mutex // out and busy
		busy  bool       // whether it builds or waits for another's build
		start = time.Now()
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "prepare: "+format+"\n", args...)
	}
	say("building %s (cold: %s)...", s.what, s.cold)
	logf := func(format string, args ...any) {
		mu.Lock()
		busy = true
		mu.Unlock()
		say("%s", fmt.Sprintf(format, args...))
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func(every time.Duration) {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				b := busy
				mu.Unlock()
				if b {
					say("%s: still building (%s)", s.what, since(start))
				}
			}
		}
	}(progressEvery)
	where, err := s.prepare(logf)
	close(done)
	<-stopped
	mu.Lock()
	built := busy
	mu.Unlock()
	var nn notNeeded
	switch {
	case errors.As(err, &nn):
		say("%s: not built: %s", s.what, nn)
		return true
	case err == nil && !built:
		say("%s: ready in %s (cached): %s", s.what, since(start), where)
		return true
	case err == nil:
		say("%s: ready in %s: %s", s.what, since(start), where)
		return true
	}
	msg := strings.TrimSpace(err.Error())
	say("%s cannot be had here (after %s):\n\t%s", s.what, since(start), strings.ReplaceAll(msg, "\n", "\n\t"))
	if ci {
		say("FAILED: %s: under CI=true it must be had", s.what)
		return false
	}
	say("SKIPPED: %s: %s (under CI=true this fails)", s.what, s.without)
	return true
}

// buildImageBinaries compiles the image's binaries as make image does,
// into Go's build cache: go list -export compiles every package of theirs
// as go build does, with the same cache entries, and links nothing (a
// second or two when the cache is warm). Without podman or docker,
// deploy's TestImage does not build them, and neither does this.
func buildImageBinaries(logf func(string, ...any)) (string, error) {
	engine := ""
	for _, name := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(name); err == nil {
			engine = name
			break
		}
	}
	if engine == "" {
		return "", notNeeded("neither podman nor docker is installed: TestImage skips, or fails under CI=true")
	}
	root, err := buildcache.RepoRoot()
	if err != nil {
		return "", err
	}
	for _, b := range imageBuilds {
		if err := b.compile(root, logf); err != nil {
			return "", err
		}
	}
	return "Go's build cache, for " + engine + "'s build in TestImage", nil
}

// compile compiles b's packages into Go's build cache: go list -export
// compiles every package of theirs as go build does, with the same cache
// entries, and links nothing.
func (b imageBuild) compile(root string, logf func(string, ...any)) error {
	spec := buildcache.Spec{Module: filepath.Join(root, b.dir)}
	if b.cke {
		proxy, err := buildcache.SharedGoProxy()
		if err != nil {
			return err
		}
		spec.FileProxy, spec.Env = proxy, []string{"GONOSUMDB=github.com/cybozu-go/cke"}
	}
	env, err := spec.Environ()
	if err != nil {
		return err
	}
	args := append(append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}"}, b.flags...), b.packages...)
	ctx, cancel := context.WithTimeout(context.Background(), imageTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = spec.Module
	cmd.Env = append(env, b.env...)
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Tell the caller it builds only once it takes a while: a warm cache
	// answers within seconds.
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			logf("compiling %s in ./%s into Go's build cache: %s go %s", strings.Join(b.packages, " "), b.dir, strings.Join(b.env, " "), strings.Join(args, " "))
		}
	})
	err = cmd.Run()
	close(done)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("compiling the image's %s (limit %s): %w\n%s", strings.Join(b.packages, " "), imageTimeout, err, buildcache.Tail(stderr.Bytes(), 40))
	}
	return nil
}

// notNeeded is why a step has nothing to do.
type notNeeded string

func (n notNeeded) Error() string { return string(n) }

func since(t time.Time) time.Duration {
	d := time.Since(t)
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
