//go:build releasecheck

package deploy

// The release tests check the artifacts of one architecture as `make
// release-check` builds them (deploy/release.sh check), which runs them
// with -tags releasecheck and says where: RELEASE_DIST (the directory),
// RELEASE_VERSION, RELEASE_REVISION and RELEASE_ARCH. They install
// nothing: the .deb is read with dpkg-deb and unpacked in a temporary
// directory, and its maintainer script runs against stand-ins of the
// commands that change users.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// release is what release-check built.
type release struct {
	dist, version, revision, arch string
	epoch                         int64
}

func releaseUnderTest(t *testing.T) release {
	t.Helper()
	r := release{dist: os.Getenv("RELEASE_DIST"), version: os.Getenv("RELEASE_VERSION"),
		revision: os.Getenv("RELEASE_REVISION"), arch: os.Getenv("RELEASE_ARCH")}
	if r.dist == "" || r.version == "" || r.revision == "" || r.arch == "" {
		t.Fatal("RELEASE_DIST, RELEASE_VERSION, RELEASE_REVISION and RELEASE_ARCH name the release to check: run make release-check")
	}
	epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	if err != nil {
		t.Fatalf("SOURCE_DATE_EPOCH=%q: %v (make release-check sets it to the commit's time)", os.Getenv("SOURCE_DATE_EPOCH"), err)
	}
	r.epoch = epoch
	return r
}

// pkgVersion is the version as file names and Debian's Version have it.
func (r release) pkgVersion() string {
	if v, ok := strings.CutPrefix(r.version, "v"); ok && strings.Count(v, ".") == 2 {
		return v
	}
	return "0.0.0~" + r.version
}

// checkVersion runs a binary's --version: the release's version and
// commit, and for cke the CKE release it is built on.
func checkVersion(t *testing.T, r release, file string) {
	t.Helper()
	if r.arch != runtime.GOARCH {
		return
	}
	out := string(run(t, time.Minute, "", file, "--version"))
	for _, want := range []string{r.version, "commit " + r.revision[:min(12, len(r.revision))]} {
		if !strings.Contains(out, want) {
			t.Errorf("%s --version: %q lacks %s", filepath.Base(file), out, want)
		}
	}
	if filepath.Base(file) == "cke" && !strings.Contains(out, "cke "+ckeRelease(t)) {
		t.Errorf("cke --version: %q does not name CKE %s", out, ckeRelease(t))
	}
}

// TestReleaseArchive: the archive is named after the version, the CKE
// release and the platform, holds the three binaries (static, stripped,
// stamped), the LICENSE and the README in one directory, in name order,
// owned by root with the commit's time and fixed modes.
func TestReleaseArchive(t *testing.T) {
	r := releaseUnderTest(t)
	dir := "ckegen_" + r.pkgVersion() + "_cke-" + strings.TrimPrefix(ckeRelease(t), "v") + "_linux_" + r.arch
	f, err := os.Open(filepath.Join(r.dist, dir+".tar.gz"))
	if err != nil {
		t.Fatalf("the archive: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header names %q at %v: gzip -n records neither", zr.Name, zr.ModTime)
	}
	want := map[string]int64{dir + "/": 0o755, dir + "/LICENSE": 0o644, dir + "/README.md": 0o644,
		dir + "/cke": 0o755, dir + "/ckegen": 0o755, dir + "/ckegenctl": 0o755}
	out := t.TempDir()
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		mode, ok := want[h.Name]
		switch {
		case !ok:
			t.Errorf("the archive has %s, which a release does not ship", h.Name)
			continue
		case h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "":
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0 with no names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		case h.ModTime.Unix() != r.epoch:
			t.Errorf("%s: time %v, want the commit's, %v", h.Name, h.ModTime.UTC(), time.Unix(r.epoch, 0).UTC())
		case h.Mode&0o7777 != mode:
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode&0o7777, mode)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, filepath.Base(h.Name)), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.IsSorted(names) || len(names) != len(want) {
		t.Errorf("the archive lists %q: want the %d entries of a release, in name order", names, len(want))
	}
	for _, doc := range []string{"LICENSE", "README.md"} {
		sameFile(t, filepath.Join(root, doc), filepath.Join(out, doc))
	}
	for _, name := range shipped {
		checkStatic(t, filepath.Join(out, name))
		checkStripped(t, filepath.Join(out, name))
		checkVersion(t, r, filepath.Join(out, name))
	}
}

// sameFile fails unless got holds want's bytes.
func sameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(got), err)
		return
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s is not %s as committed", got, want)
	}
}

// TestReleaseSBOM: a CycloneDX SBOM per binary, of the binary's main
// module at the release's version, listing the modules it is built of
// (CKE's for cke) and none of the release tools; no serial number and no
// time stamp, so that two builds give the same bytes.
func TestReleaseSBOM(t *testing.T) {
	r := releaseUnderTest(t)
	mains := map[string]string{"ckegen": "github.com/ckegen/ckegen", "ckegenctl": "github.com/ckegen/ckegen",
		"cke": "github.com/ckegen/ckegen/ckeserver"}
	needs := map[string]string{"ckegen": "go.etcd.io/etcd/client/v3", "ckegenctl": "github.com/spf13/cobra",
		"cke": "github.com/cybozu-go/cke"}
	tools := toolModules(t)
	for _, name := range shipped {
		var bom struct {
			BOMFormat    string `json:"bomFormat"`
			SerialNumber string `json:"serialNumber"`
			Metadata     struct {
				Timestamp string `json:"timestamp"`
				Component struct{ Name, Version string }
			} `json:"metadata"`
			Components []struct{ Name, Version string } `json:"components"`
		}
		readJSON(t, filepath.Join(r.dist, name+"_"+r.pkgVersion()+"_linux_"+r.arch+".cdx.json"), &bom)
		if bom.BOMFormat != "CycloneDX" || bom.SerialNumber != "" || bom.Metadata.Timestamp != "" {
			t.Errorf("%s's SBOM: format %q, serial %q, time %q: want CycloneDX with neither", name, bom.BOMFormat, bom.SerialNumber, bom.Metadata.Timestamp)
		}
		if c := bom.Metadata.Component; c.Name != mains[name] || c.Version != r.version {
			t.Errorf("%s's SBOM is of %s %s, want %s %s", name, c.Name, c.Version, mains[name], r.version)
		}
		found := false
		for _, c := range bom.Components {
			found = found || c.Name == needs[name]
			if slices.Contains(tools, c.Name) {
				t.Errorf("%s's SBOM lists %s, a release tool: it is in a shipped binary", name, c.Name)
			}
			if name == "cke" && c.Name == "github.com/cybozu-go/cke" && c.Version != ckeRelease(t) {
				t.Errorf("cke's SBOM lists CKE %s, want %s", c.Version, ckeRelease(t))
			}
		}
		if !found {
			t.Errorf("%s's SBOM lists %d modules but not %s", name, len(bom.Components), needs[name])
		}
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestReleaseSums: SHA256SUMS lists every artifact, and each matches.
func TestReleaseSums(t *testing.T) {
	r := releaseUnderTest(t)
	out := string(run(t, 5*time.Minute, r.dist, "sha256sum", "--check", "--strict", "SHA256SUMS"))
	entries, err := os.ReadDir(r.dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !strings.Contains(out, e.Name()+": OK") {
			t.Errorf("SHA256SUMS does not check %s:\n%s", e.Name(), out)
		}
	}
}

// debFiles are the files of the .deb and their modes; directories aside.
var debFiles = map[string]string{
	"./usr/bin/ckegen":                     "-rwxr-xr-x",
	"./usr/bin/ckegenctl":                  "-rwxr-xr-x",
	"./usr/bin/cke":                        "-rwxr-xr-x",
	"./lib/systemd/system/ckegen.service":  "-rw-r--r--",
	"./lib/systemd/system/cke.service":     "-rw-r--r--",
	"./etc/default/ckegen":                 "-rw-r--r--",
	"./usr/share/doc/ckegen/copyright":     "-rw-r--r--",
	"./usr/share/doc/ckegen/changelog.gz":  "-rw-r--r--",
	"./usr/share/lintian/overrides/ckegen": "-rw-r--r--",
}

// TestReleaseDeb reads the .deb as dpkg would, without installing it:
// its control fields, its files (root's, the binaries in /usr/bin, the
// units, no container unit), /etc/default/ckegen as its one conffile, its
// maintainer script; then unpacks it and checks the units (ExecStart in
// /usr/bin, the rest as deploy/systemd/ has them, systemd-analyze verify
// with the unpacked binaries), the packaged ckegen's --version, and lintian's
// verdict: no error.
func TestReleaseDeb(t *testing.T) {
	r := releaseUnderTest(t)
	dpkgDeb := need(t, "dpkg-deb", "apt-get install -y dpkg")
	deb := filepath.Join(r.dist, "ckegen_"+r.pkgVersion()+"_"+r.arch+".deb")
	for field, want := range map[string]string{"Package": "ckegen", "Version": r.pkgVersion(), "Architecture": r.arch,
		"Section": "admin", "Priority": "optional", "Depends": "adduser", "Homepage": "https://github.com/ckegen/ckegen"} {
		if got := strings.TrimSpace(string(run(t, time.Minute, "", dpkgDeb, "--field", deb, field))); got != want {
			t.Errorf("%s: %s: %q, want %q", filepath.Base(deb), field, got, want)
		}
	}
	if m := strings.TrimSpace(string(run(t, time.Minute, "", dpkgDeb, "--field", deb, "Maintainer"))); !strings.Contains(m, "@") {
		t.Errorf("Maintainer %q: want a name and an address", m)
	}
	checkDebFiles(t, run(t, time.Minute, "", dpkgDeb, "--contents", deb))
	control := t.TempDir()
	run(t, time.Minute, "", dpkgDeb, "--control", deb, control)
	if data, err := os.ReadFile(filepath.Join(control, "conffiles")); err != nil || string(data) != "/etc/default/ckegen\n" {
		t.Errorf("conffiles: %q (%v), want /etc/default/ckegen alone", data, err)
	}
	for _, script := range []string{"preinst", "prerm", "postrm"} {
		if _, err := os.Stat(filepath.Join(control, script)); err == nil {
			t.Errorf("the package has a %s; only postinst (the user) is expected", script)
		}
	}
	checkPostinst(t, filepath.Join(control, "postinst"))

	tree := t.TempDir()
	run(t, time.Minute, "", dpkgDeb, "--extract", deb, tree)
	checkDebUnits(t, tree)
	sameFile(t, filepath.Join(root, "deploy", "systemd", "ckegen.env"), filepath.Join(tree, "etc", "default", "ckegen"))
	for _, name := range shipped {
		checkVersion(t, r, filepath.Join(tree, "usr", "bin", name))
	}
	checkLintian(t, deb)
}

// checkDebFiles checks dpkg-deb --contents: debFiles, root's, and
// directories only besides.
func checkDebFiles(t *testing.T, listing []byte) {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(listing)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb --contents: %q", line)
		}
		mode, owner, name := f[0], f[1], f[len(f)-1]
		if owner != "root/root" {
			t.Errorf("%s is %s's, want root's", name, owner)
		}
		if strings.HasPrefix(mode, "d") {
			continue
		}
		want, ok := debFiles[name]
		switch {
		case !ok:
			t.Errorf("the package has %s, which it should not ship", name)
		case mode != want:
			t.Errorf("%s: mode %s, want %s", name, mode, want)
		}
		seen[name] = true
	}
	for name := range debFiles {
		if !seen[name] {
			t.Errorf("the package lacks %s", name)
		}
	}
}

// checkDebUnits: the packaged units are deploy/systemd/'s with the
// binaries' path /usr/bin, and systemd-analyze verify accepts them with
// the unpacked binaries.
func checkDebUnits(t *testing.T, tree string) {
	t.Helper()
	units := filepath.Join(tree, "lib", "systemd", "system")
	for name, exec := range map[string]string{
		"ckegen.service": "/usr/bin/ckegen --config /etc/ckegen/config.yml $CKEGEN_OPTS",
		"cke.service":    "/usr/bin/cke --config /etc/cke/config.yml",
	} {
		if got := parseUnit(t, filepath.Join(units, name)).get("Service", "ExecStart"); got != exec {
			t.Errorf("the package's %s: ExecStart=%q, want %q", name, got, exec)
		}
		orig, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		packaged, err := os.ReadFile(filepath.Join(units, name))
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(string(orig), "/usr/local/bin/", "/usr/bin/"); string(packaged) != want {
			t.Errorf("the package's %s is not deploy/systemd/%s with /usr/bin for /usr/local/bin", name, name)
		}
	}
	// systemd-analyze verify checks that ExecStart's program exists: a
	// copy of each unit names the unpacked binary, the rest unchanged.
	analyze := need(t, "systemd-analyze", "apt-get install -y systemd")
	verifyDir := t.TempDir()
	for _, name := range []string{"ckegen.service", "cke.service"} {
		data, err := os.ReadFile(filepath.Join(units, name))
		if err != nil {
			t.Fatal(err)
		}
		copied := strings.ReplaceAll(string(data), "ExecStart=/usr/bin/", "ExecStart="+filepath.Join(tree, "usr", "bin")+"/")
		if err := os.WriteFile(filepath.Join(verifyDir, name), []byte(copied), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := runErr(time.Minute, verifyDir, analyze, "verify", "--man=no", "./"+name)
		if err != nil || len(out)+len(errOut) > 0 {
			t.Errorf("systemd-analyze verify the package's %s: %v\n%s%s", name, err, out, errOut)
		}
	}
}

// checkLintian runs lintian, Debian's package checker: no error, and
// every override the package carries says why in a comment above it.
func checkLintian(t *testing.T, deb string) {
	t.Helper()
	lintian := need(t, "lintian", "apt-get install -y lintian")
	out, errOut, err := runErr(10*time.Minute, "", lintian, "--fail-on", "error", deb)
	if err != nil {
		t.Errorf("lintian %s: %v\n%s%s", filepath.Base(deb), err, out, errOut)
	}
	t.Logf("lintian:\n%s", out)
	data, err := os.ReadFile(filepath.Join(root, "deploy", "debian", "lintian-overrides"))
	if err != nil {
		t.Fatal(err)
	}
	commented := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			commented = true
		case strings.TrimSpace(line) == "":
			commented = false
		case !commented:
			t.Errorf("lintian-overrides: %q has no comment above it saying why", line)
		}
	}
}
