package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
)

// toolModules are the modules of the release tools that tools/go.mod
// pins (its tool lines), each the longest of its requirements that
// contains the tool's package.
func toolModules(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var tools, required []string
	block := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimSpace(line))
		switch {
		case len(f) == 0:
		case f[0] == ")":
			block = ""
		case len(f) == 2 && f[1] == "(":
			block = f[0]
		case f[0] == "tool" && len(f) == 2:
			tools = append(tools, f[1])
		case f[0] == "require" && len(f) >= 3:
			required = append(required, f[1])
		case block == "tool":
			tools = append(tools, f[0])
		case block == "require":
			required = append(required, f[0])
		}
	}
	var mods []string
	for _, tool := range tools {
		mod := ""
		for _, r := range required {
			if (tool == r || strings.HasPrefix(tool, r+"/")) && len(r) > len(mod) {
				mod = r
			}
		}
		if mod == "" {
			t.Fatalf("tools/go.mod: the tool %s is in no module it requires", tool)
		}
		mods = append(mods, mod)
	}
	if len(mods) == 0 {
		t.Fatal("tools/go.mod pins no tool")
	}
	return mods
}

// TestToolsNotShipped: the release tools are pinned in tools/go.mod, a
// module of its own, and none of their modules is in what ckegen,
// ckegenctl or cke (ckeserver/, which inherits the root module's
// requirements) are built of: a package of a tool imported by a shipped
// binary fails here.
func TestToolsNotShipped(t *testing.T) {
	tools := toolModules(t)
	for _, want := range []string{"github.com/goreleaser/nfpm/v2", "github.com/CycloneDX/cyclonedx-gomod"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools/go.mod pins no tool of %s, which make release runs", want)
		}
	}
	check := func(dir string, env []string, pkgs ...string) {
		args := append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}"}, pkgs...)
		out, errOut, err := runEnv(5*time.Minute, filepath.Join(root, dir), env, "go", args...)
		if err != nil {
			if dir == "ckeserver" && os.Getenv("CI") == "" {
				t.Skipf("go list in ckeserver/ (CKE's module from ../shared/goproxy or GOPROXY): %v: %s", err, errOut)
			}
			t.Fatalf("go list -deps %s in %s: %v\n%s", strings.Join(pkgs, " "), dir, err, errOut)
		}
		mods := strings.Fields(string(out))
		if len(mods) == 0 {
			t.Fatalf("go list -deps %s lists no module", strings.Join(pkgs, " "))
		}
		for _, m := range tools {
			if slices.Contains(mods, m) {
				t.Errorf("%s (in %s) is built with %s, a release tool: tools belong in tools/go.mod alone", strings.Join(pkgs, " "), dir, m)
			}
		}
	}
	check(".", nil, "./cmd/ckegen", "./cmd/ckegenctl")
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	if _, err := os.Stat(proxy); err == nil {
		gp, _, _ := runErr(time.Minute, "", "go", "env", "GOPROXY")
		env = []string{"GOPROXY=file://" + proxy + "," + strings.TrimSpace(string(gp)), "GONOSUMDB=github.com/cybozu-go/cke"}
	}
	check("ckeserver", env, "./cmd/cke")
}
