package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
)

// TestImageBuildAsMakefile: the image's binaries are built here with the
// directories, environment, flags and packages of make image's go
// builds, one for one, or the cache they warm is not the one TestImage
// uses.
func TestImageBuildAsMakefile(t *testing.T) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	block := ""
	if _, after, ok := strings.Cut(string(data), "\ndefine build-binaries\n"); ok {
		block, _, _ = strings.Cut(after, "\nendef\n")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if strings.Contains(l, "$(GO) build") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) != len(imageBuilds) {
		t.Fatalf("make image's build-binaries has %d go builds, prepare %d:\n%s", len(lines), len(imageBuilds), strings.Join(lines, "\n"))
	}
	for i, b := range imageBuilds {
		line, want := lines[i], ""
		if b.dir != "" {
			want = "cd " + b.dir + " && "
		}
		if b.cke {
			want += "$(CKEREF_ENV) "
		}
		want += strings.Join(b.env, " ") + " $(GO) build " + strings.Join(b.flags, " ") + " "
		if !strings.HasPrefix(line, want) || !strings.HasSuffix(line, " "+strings.Join(b.packages, " ")) {
			t.Errorf("make image builds with\n\t%s\nnot as prepare does: %s... %s", line, want, strings.Join(b.packages, " "))
		}
	}
}

// TestRun: what a step prints when it builds, finds its result cached, or
// cannot have it (a skip outside CI, a failure under CI=true).
func TestRun(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 20 * time.Millisecond
	for _, c := range []struct {
		name    string
		prepare func(func(string, ...any)) (string, error)
		ci      bool
		ok      bool
		want    []string
	}{
		{"built", func(logf func(string, ...any)) (string, error) {
			logf("building the thing into /c/x")
			time.Sleep(100 * time.Millisecond)
			return "/c/x/thing", nil
		}, true, true, []string{
			"prepare: building the thing (cold: ages)...\n",
			"prepare: building the thing into /c/x\n",
			"prepare: the thing: still building (",
			"prepare: the thing: ready in ", ": /c/x/thing\n",
		}},
		{"cached", func(func(string, ...any)) (string, error) { return "/c/x/thing", nil }, true, true, []string{
			"prepare: the thing: ready in ", " (cached): /c/x/thing\n",
		}},
		{"unavailable", func(func(string, ...any)) (string, error) {
			return "", errors.New("go: downloading example.com/x: no proxy\nsecond line")
		}, false, true, []string{
			"prepare: the thing cannot be had here (after ", "):\n\tgo: downloading example.com/x: no proxy\n\tsecond line\n",
			"prepare: SKIPPED: the thing: its tests skip (under CI=true this fails)\n",
		}},
		{"unavailable under CI", func(func(string, ...any)) (string, error) {
			return "", errors.New("no proxy")
		}, true, false, []string{
			"prepare: FAILED: the thing: under CI=true it must be had\n",
		}},
		{"not needed", func(func(string, ...any)) (string, error) {
			return "", notNeeded("no podman")
		}, true, true, []string{
			"prepare: the thing: not built: no podman\n",
		}},
	} {
		var out bytes.Buffer
		ok := run(&out, step{what: "the thing", cold: "ages", prepare: c.prepare, without: "its tests skip"}, c.ci)
		got := out.String()
		if ok != c.ok {
			t.Errorf("%s: run = %v, want %v", c.name, ok, c.ok)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the output lacks %q:\n%s", c.name, w, got)
			}
		}
		if c.name == "cached" && strings.Contains(got, "still building") {
			t.Errorf("%s: progress of a build that did not happen:\n%s", c.name, got)
		}
	}
}
