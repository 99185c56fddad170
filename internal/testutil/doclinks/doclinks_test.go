// Package doclinks checks that the project's documents name what is
// there: a link to a file that moved or to a heading that was renamed, a
// repository path that does not exist, or a package's name that is not
// declared, fails.
package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor is the id GitHub gives a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(t *testing.T, path string) map[string]bool {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, h := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(data), ""), -1) {
		m[anchor(h[1])] = true
	}
	return m
}

func TestLinks(t *testing.T) {
	root := "../../.."
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(data), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), file)
			}
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file", filepath.Base(f), target)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", filepath.Base(f), target, filepath.Base(path))
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d links checked: the documents are not where the test looks", checked)
	}
}

func TestAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"The offline CLI beside CKE v1.35.4, as whole processes": "the-offline-cli-beside-cke-v1354-as-whole-processes",
		"Offline: `ckegenctl sabakan generate`":                  "offline-ckegenctl-sabakan-generate",
		"From CKE's `ckecli`":                                    "from-ckes-ckecli",
	} {
		if got := anchor(h); got != want {
			t.Errorf("anchor(%q) = %q, want %q", h, got, want)
		}
	}
}
