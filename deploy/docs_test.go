package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shellCommands returns the simple commands of a Markdown document's sh
// code blocks, each as its words: continuation lines joined, comments
// dropped, split at ;, &&, ||, | and parentheses. Quotes are not
// understood beyond that: the document's commands do not need them to be.
func shellCommands(doc string) [][]string {
	var cmds [][]string
	in := false
	var line strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			in = !in && (t == "```sh" || t == "```bash" || t == "```shell")
			continue
		}
		if !in {
			continue
		}
		if i := strings.Index(t, " #"); i >= 0 {
			t = t[:i]
		}
		if strings.HasPrefix(t, "#") {
			t = ""
		}
		if strings.HasSuffix(t, `\`) {
			line.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		line.WriteString(t)
		full := line.String()
		line.Reset()
		for _, sep := range []string{"&&", "||", ";", "|", "(", ")"} {
			full = strings.ReplaceAll(full, sep, "\n")
		}
		for _, c := range strings.Split(full, "\n") {
			if words := strings.Fields(c); len(words) > 0 {
				cmds = append(cmds, words)
			}
		}
	}
	return cmds
}

// changesCKEFile says which argument of a simple command names a file of
// CKE's (/etc/cke or in it) that the command would change, "" when none:
// the argument of a command that changes its arguments (modes, owners,
// ACLs, contents, removal), the destination of a copy, and the target
// of a redirection.
func changesCKEFile(words []string) string {
	for len(words) > 0 && (words[0] == "sudo" || strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-")) {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	var args []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == ">" || w == ">>":
			if i+1 < len(words) && namesCKEDir(words[i+1]) {
				return words[i+1]
			}
			i++
		case strings.HasPrefix(w, ">"):
			if namesCKEDir(strings.TrimLeft(w, ">")) {
				return w
			}
		case !strings.HasPrefix(w, "-"):
			args = append(args, w)
		}
	}
	named := func() string {
		for _, a := range args {
			if namesCKEDir(a) {
				return a
			}
		}
		return ""
	}
	switch words[0] {
	case "chgrp", "chmod", "chown", "setfacl", "chattr", "chcon", "rm", "truncate", "touch", "tee", "mv", "shred":
		return named()
	case "sed", "perl":
		if slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "-i") }) {
			return named()
		}
	case "cp", "install", "ln", "rsync", "dd":
		if len(args) > 0 && namesCKEDir(args[len(args)-1]) {
			return args[len(args)-1]
		}
		for _, w := range words {
			if strings.HasPrefix(w, "of=") && namesCKEDir(w) || strings.HasPrefix(w, "--target-directory=") && namesCKEDir(w) {
				return w
			}
		}
	}
	return ""
}

// TestChangesCKEFile: what changesCKEFile finds, and what it lets be.
func TestChangesCKEFile(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
	}{
		{"chgrp ckegen /etc/cke/config.yml", "/etc/cke/config.yml"},
		{"sudo chmod 0640 /etc/cke/etcd.key", "/etc/cke/etcd.key"},
		{"setfacl -m g:ckegen:r /etc/cke/config.yml", "/etc/cke/config.yml"},
		{"install -m 0644 x.yml /etc/cke/", "/etc/cke/"},
		{"cp /tmp/config.yml /etc/cke/config.yml", "/etc/cke/config.yml"},
		{"sed -i s/a/b/ /etc/cke/config.yml", "/etc/cke/config.yml"},
		{"echo x > /etc/cke/config.yml", "/etc/cke/config.yml"},
		{"echo x >>/etc/cke/config.yml", ">>/etc/cke/config.yml"},
		{"mv /etc/cke/config.yml /tmp/", "/etc/cke/config.yml"},
		{"chown -R root /etc/cke", "/etc/cke"},
		{"install -o root -g ckegen -m 0640 /etc/cke/etcd.crt /etc/ckegen/", ""},
		{"sed s#/etc/cke/#/etc/ckegen/#g /etc/cke/config.yml > /etc/ckegen/config.yml", ""},
		{"grep -- -file: /etc/cke/config.yml", ""},
		{"chgrp ckegen /etc/ckegen/config.yml", ""},
		{"cke --config /etc/cke/config.yml", ""},
	} {
		if got := changesCKEFile(strings.Fields(c.cmd)); got != c.want {
			t.Errorf("changesCKEFile(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
}

// TestInstallDoc: docs/install.md's commands never change a file of
// CKE's: ckegen's daemon reads a configuration of its own, and cke reads
// CKE's as CKE's server does. Its commands that make the user ckegen make
// a system one with ids of the system's choosing, as the .deb does. And
// every file of deploy/ it names exists.
func TestInstallDoc(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := shellCommands(string(data))
	if len(cmds) < 10 {
		t.Fatalf("docs/install.md: %d commands in its sh blocks; the blocks were not found", len(cmds))
	}
	accounts := 0
	for _, words := range cmds {
		if f := changesCKEFile(words); f != "" {
			t.Errorf("docs/install.md: %q changes CKE's %s: install nothing into CKE's files, give ckegen its own (/etc/ckegen)", strings.Join(words, " "), f)
		}
		switch words[0] {
		case "useradd", "groupadd", "adduser", "addgroup":
			accounts++
			if why := notSystemID(words); why != "" {
				t.Errorf("docs/install.md: %q: %s", strings.Join(words, " "), why)
			}
		}
	}
	if accounts == 0 {
		t.Error("docs/install.md: no command makes the user ckegen")
	}
	for _, p := range regexp.MustCompile(`deploy/[A-Za-z0-9_./-]*[A-Za-z0-9_]`).FindAllString(string(data), -1) {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("docs/install.md names %s: %v", p, err)
		}
	}
}
