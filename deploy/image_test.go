package deploy

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
)

// maxImageBytes is the most the image may weigh (docs/install.md, "The
// image"), and maxBinaryBytes each binary in it: about a fifth over what
// they weigh (121 MB: ckegen 36 MB, ckegenctl 26 MB, cke 59 MB), so that
// a binary that doubles, debug information kept, or a program added shows.
const maxImageBytes = 140_000_000

var maxBinaryBytes = map[string]int64{
	"ckegen":    44_000_000,
	"ckegenctl": 31_000_000,
	"cke":       71_000_000,
}

// shipped are the binaries the image ships, in /usr/local/bin: ckegen's
// daemon (the entry point), its CLI and CKE's server with ckegen inside.
// fakesabakan, a test server, is not one of them.
var shipped = []string{"ckegen", "ckegenctl", "cke"}

// imageUID is the image's user, as CKE's image has it.
const imageUID = 10000

// containerEngine finds podman, or a docker that reaches an engine (a
// docker client alone cannot build). Without either the test is skipped,
// except under CI, where it fails.
func containerEngine(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("podman"); err == nil {
		return p
	}
	if p, err := exec.LookPath("docker"); err == nil {
		if _, _, err := runErr(30*time.Second, "", p, "info"); err == nil {
			return p
		}
	}
	return need(t, "podman", "apt-get install -y podman")
}

// imageConfig is the part of `podman image inspect` (or docker's) the test
// reads.
type imageConfig struct {
	Size   int64
	Config struct {
		User       string
		Entrypoint []string
		WorkingDir string
		Labels     map[string]string
	}
}

// TestImage builds the image as `make image` does, with a version and a
// commit of its own, and checks what an operator gets: the labels (the
// license's by default), a user that is not root, the entry point, the
// size; then exports the image's file system (containers cannot run here,
// but they can be created and exported) and checks every file in it, that
// the binaries are static and stripped, that each prints the image's
// version and commit (cke with the CKE release it is built on), that cke
// takes the flags deploy/systemd/cke.service gives it, and that the
// exported ckegenctl generates a cluster from the bundled example.
func TestImage(t *testing.T) {
	engine := containerEngine(t)
	version := fmt.Sprintf("v0.0.0-deploytest.%d", time.Now().UnixNano())
	revision := fmt.Sprintf("%040x", time.Now().UnixNano())
	image := "localhost/ckegen-deploytest:" + version
	stage := t.TempDir()

	start := time.Now()
	run(t, 9*time.Minute, root, "make", "--no-print-directory", "image",
		"VERSION="+version, "REVISION="+revision, "IMAGE="+image, "IMAGE_STAGE="+stage, "CONTAINER_ENGINE="+engine)
	t.Logf("make image: %s", time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		if _, errOut, err := runErr(time.Minute, "", engine, "rmi", "--force", image); err != nil {
			t.Logf("removing %s: %v: %s", image, err, errOut)
		}
	})

	var inspected []imageConfig
	if err := json.Unmarshal(run(t, time.Minute, "", engine, "image", "inspect", image), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("%s image inspect %s: want one image, got %d (%v)", engine, image, len(inspected), err)
	}
	img := inspected[0]
	t.Logf("image %s: %.1f MB (%d bytes)", image, float64(img.Size)/1e6, img.Size)
	if img.Size > maxImageBytes {
		t.Errorf("the image is %d bytes, over %d: find what a binary links but does not need (docs/install.md)", img.Size, maxImageBytes)
	}
	if uid, _, _ := strings.Cut(img.Config.User, ":"); uid != fmt.Sprint(imageUID) {
		t.Errorf("the image's user is %q, want %d (not root)", img.Config.User, imageUID)
	}
	if want := []string{"/usr/local/bin/ckegen"}; !slices.Equal(img.Config.Entrypoint, want) {
		t.Errorf("entry point %q, want %q", img.Config.Entrypoint, want)
	}
	if img.Config.WorkingDir != "/var/lib/ckegen" {
		t.Errorf("working directory %q, want /var/lib/ckegen", img.Config.WorkingDir)
	}
	for label, want := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   "https://github.com/ckegen/ckegen",
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if got := img.Config.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}

	fsys, headers := exportImage(t, engine, image)
	checkFiles(t, fsys, headers)
	bin := filepath.Join(fsys, "usr/local/bin")
	ckeVersion := ckeRelease(t)
	for _, name := range shipped {
		file := filepath.Join(bin, name)
		checkStatic(t, file)
		checkStripped(t, file)
		if h := headers["usr/local/bin/"+name]; h != nil {
			t.Logf("%s: %.1f MB", name, float64(h.Size)/1e6)
			if h.Size > maxBinaryBytes[name] {
				t.Errorf("%s is %d bytes, over %d: find what it links but does not need", name, h.Size, maxBinaryBytes[name])
			}
		}
		// Stamped with the version and the commit (-X of internal/version's
		// Version and Revision): --version prints the version, and where it
		// prints a commit (version.Commit), the stamped one's first 12
		// digits, whole in the binary's data. cke prints both, after the
		// CKE release it is built on. A binary that prints no commit has
		// none: the linker drops a variable nothing reads, and its -X.
		out := string(run(t, time.Minute, "", file, "--version"))
		if !slices.Contains(strings.Fields(out), version) {
			t.Errorf("%s --version printed %q, want the image's version %s", name, out, version)
		}
		if _, after, ok := strings.Cut(out, "commit "); ok || name == "cke" {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(after, revision[:12]) || !bytes.Contains(data, []byte(revision)) {
				t.Errorf("%s --version printed %q, want the commit it was stamped with, %s", name, out, revision[:12])
			}
		} else {
			t.Logf("%s --version prints no commit (%q): it reads no internal/version.Revision", name, strings.TrimSpace(out))
		}
		if want := "cke " + ckeVersion + " with ckegen " + version + " (commit " + revision[:12] + ", "; name == "cke" && !strings.HasPrefix(out, want) {
			t.Errorf("cke --version printed %q, want %q...", out, want)
		}
	}
	// cke.service runs cke with CKE's flags: the binary takes them (it
	// parses every flag before --version prints).
	ckeUnit := parseUnit(t, filepath.Join(root, "deploy", "systemd", "cke.service"))
	args := strings.Fields(ckeUnit.get("Service", "ExecStart"))
	if len(args) == 0 || args[0] != "/usr/local/bin/cke" {
		t.Errorf("cke.service: ExecStart %q does not run /usr/local/bin/cke", args)
	} else if out, errOut, err := runErr(time.Minute, "", filepath.Join(bin, "cke"), append(args[1:], "--version")...); err != nil {
		t.Errorf("cke %s --version: %v: cke.service's flags are not cke's\n%s%s", strings.Join(args[1:], " "), err, out, errOut)
	}

	ex := filepath.Join(root, "examples")
	out := run(t, 2*time.Minute, "", filepath.Join(bin, "ckegenctl"), "sabakan", "generate",
		"--template", filepath.Join(ex, "template.yml"),
		"--machines", filepath.Join(ex, "machines.json"),
		"--constraints", filepath.Join(ex, "constraints.json"),
		"--now", "2026-01-02T00:00:00Z")
	c, err := cluster.Parse(out)
	if err != nil {
		t.Fatalf("the exported ckegenctl's cluster does not parse: %v\n%s", err, out)
	}
	cps := 0
	for _, n := range c.Nodes {
		if n.ControlPlane {
			cps++
		}
	}
	// examples/constraints.json: 3 control planes, 20 to 40 workers.
	if cps != 3 || len(c.Nodes)-cps < 20 || len(c.Nodes)-cps > 40 {
		t.Errorf("the exported ckegenctl generated %d control planes and %d workers, want 3 and 20 to 40", cps, len(c.Nodes)-cps)
	}
}

// TestImageWithoutCKE: a machine that cannot have the CKE release cke is
// built on (no ../shared/goproxy, a GOPROXY that does not serve it, an
// empty module cache) is told so by make image before anything is built,
// with the module, its version and where it was looked for.
func TestImageWithoutCKE(t *testing.T) {
	need(t, "make", "apt-get install -y make")
	dir := t.TempDir()
	stage := filepath.Join(dir, "stage")
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noProxy := filepath.Join(dir, "no-goproxy")
	out, errOut, err := runEnv(2*time.Minute, root, []string{"GOPROXY=off", "GOMODCACHE=" + filepath.Join(dir, "modcache"), "GOFLAGS=-modcacherw"},
		"make", "--no-print-directory", "image", "SHARED_GOPROXY="+noProxy, "IMAGE_STAGE="+stage, "CA_BUNDLE="+ca, "CONTAINER_ENGINE=true")
	if err == nil {
		t.Fatalf("make image without CKE's module succeeded:\n%s%s", out, errOut)
	}
	want := "image: cannot have github.com/cybozu-go/cke " + ckeRelease(t) + ", the CKE release cke (CKE's server with ckegen inside, ckeserver/) is built on: there is no " + noProxy + " and GOPROXY does not serve it"
	if !strings.Contains(string(errOut), want) {
		t.Errorf("make image without CKE's module: stderr lacks %q:\n%s", want, errOut)
	}
	for _, name := range shipped {
		if _, err := os.Stat(filepath.Join(stage, name)); err == nil {
			t.Errorf("make image without CKE's module built %s first", name)
		}
	}
}

// exportImage creates a container of image (it is never started), exports
// its file system into a temporary directory and returns the directory
// and the header of every entry, by path without a leading or trailing
// slash.
func exportImage(t *testing.T, engine, image string) (string, map[string]*tar.Header) {
	t.Helper()
	id := strings.TrimSpace(string(run(t, time.Minute, "", engine, "create", image)))
	t.Cleanup(func() {
		if _, errOut, err := runErr(time.Minute, "", engine, "rm", "--force", id); err != nil {
			t.Logf("removing container %s: %v: %s", id, err, errOut)
		}
	})
	archive := filepath.Join(t.TempDir(), "image.tar")
	run(t, 2*time.Minute, "", engine, "export", "--output", archive, id)
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the exported image: %v", err)
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		if name == "" {
			continue
		}
		headers[name] = h
		dst := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir, headers
}

// wantFile is one entry the image must have, as `make image` stages it.
type wantFile struct {
	dir       bool
	mode      int64
	uid, gid  int
	minSize   int64
	contains  string // in a regular file
	sameAs    string // a file of the repository the regular file is a copy of
	engineMay bool   // made by the container engine, not the Containerfile
}

// checkFiles checks every entry of the file system exported into dir:
// the Containerfile's, with their owners, modes and contents, and nothing
// else but what a container engine adds to every container.
func checkFiles(t *testing.T, dir string, headers map[string]*tar.Header) {
	t.Helper()
	rootDir := func(mode int64) wantFile { return wantFile{dir: true, mode: mode} }
	want := map[string]wantFile{
		"etc":                               rootDir(0o755),
		"etc/passwd":                        {mode: 0o644, contains: fmt.Sprintf("ckegen:x:%d:%d:", imageUID, imageUID), sameAs: "deploy/image/passwd"},
		"etc/group":                         {mode: 0o644, contains: fmt.Sprintf("ckegen:x:%d:", imageUID), sameAs: "deploy/image/group"},
		"etc/ssl":                           rootDir(0o755),
		"etc/ssl/certs":                     rootDir(0o755),
		"etc/ssl/certs/ca-certificates.crt": {mode: 0o644, minSize: 1000, contains: "-----BEGIN CERTIFICATE-----"},
		"usr":                               rootDir(0o755),
		"usr/local":                         rootDir(0o755),
		"usr/local/bin":                     rootDir(0o755),
		"usr/local/bin/ckegen":              {mode: 0o755, minSize: 1 << 20},
		"usr/local/bin/ckegenctl":           {mode: 0o755, minSize: 1 << 20},
		"usr/local/bin/cke":                 {mode: 0o755, minSize: 1 << 20},
		"usr/share":                         rootDir(0o755),
		"usr/share/doc":                     rootDir(0o755),
		"usr/share/doc/ckegen":              rootDir(0o755),
		"usr/share/doc/ckegen/LICENSE":      {mode: 0o644, sameAs: "LICENSE"},
		"var":                               rootDir(0o755),
		"var/lib":                           rootDir(0o755),
		"var/lib/ckegen":                    {dir: true, mode: 0o700, uid: imageUID, gid: imageUID},
	}
	// What podman or docker put in every container they create.
	for _, p := range []string{"dev", "dev/console", "dev/pts", "dev/shm", "proc", "sys", "run", "run/.containerenv",
		".dockerenv", "etc/hostname", "etc/hosts", "etc/mtab", "etc/resolv.conf"} {
		want[p] = wantFile{engineMay: true}
	}
	for name, h := range headers {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("the image has %s, which the Containerfile does not put there", name)
			continue
		case w.engineMay:
			continue
		}
		if w.dir != (h.Typeflag == tar.TypeDir) || !w.dir && h.Typeflag != tar.TypeReg {
			t.Errorf("%s: type %q, want a directory: %v", name, h.Typeflag, w.dir)
		}
		if h.Mode&0o7777 != w.mode {
			t.Errorf("%s: mode %#o, want %#o", name, h.Mode&0o7777, w.mode)
		}
		if h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", name, h.Uid, h.Gid, w.uid, w.gid)
		}
		if h.Size < w.minSize {
			t.Errorf("%s: %d bytes, want at least %d", name, h.Size, w.minSize)
		}
		if w.contains != "" {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil || !strings.Contains(string(data), w.contains) {
				t.Errorf("%s does not contain %q (%v)", name, w.contains, err)
			}
		}
		if w.sameAs != "" {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			want, werr := os.ReadFile(filepath.Join(root, filepath.FromSlash(w.sameAs)))
			if err != nil || werr != nil || !bytes.Equal(data, want) {
				t.Errorf("%s is not a copy of the repository's %s (%v, %v)", name, w.sameAs, err, werr)
			}
		}
	}
	for name, w := range want {
		if _, ok := headers[name]; !ok && !w.engineMay {
			t.Errorf("the image has no %s", name)
		}
	}
}

// checkStatic checks that a binary needs no dynamic loader or library: the
// image has none.
func checkStatic(t *testing.T, file string) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Errorf("%s: not an ELF executable: %v", file, err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader; the image has none (build with CGO_ENABLED=0)", file)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s links shared libraries %q (%v); the image has none", file, libs, err)
	}
}

// checkStripped checks that a binary was linked without its symbol table
// and debug information (make's -ldflags "-s -w"): with them each binary
// is a third larger.
func checkStripped(t *testing.T, file string) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Errorf("%s: not an ELF executable: %v", file, err)
		return
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("%s has a section %s: it was not linked with -s -w", file, s.Name)
		}
	}
}

// ckeRelease is the CKE release ckeserver/go.mod requires, which cke is
// built on.
func ckeRelease(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "ckeserver", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/cybozu-go/cke" {
			return f[1]
		}
	}
	t.Fatal("ckeserver/go.mod requires no github.com/cybozu-go/cke")
	return ""
}
