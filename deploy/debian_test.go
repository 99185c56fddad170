package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPostinst runs deploy/debian/postinst, the .deb's maintainer script,
// as dpkg would (checkPostinst); TestReleaseDeb runs the packaged copy the
// same way.
func TestPostinst(t *testing.T) {
	checkPostinst(t, filepath.Join(root, "deploy", "debian", "postinst"))
}

// checkPostinst runs the maintainer script as dpkg would, with stand-ins
// of getent, addgroup and adduser (the only programs in its PATH, so that
// nothing of the host's is changed): on a fresh host it makes the group
// and the user ckegen as system ones with the ids the system gives them
// (no --uid nor --gid: a fixed id may lie in the range of people's
// accounts, as 10000 does), and it makes nothing where they exist (an
// upgrade, a second configure) or when dpkg calls it for anything but
// configure.
func checkPostinst(t *testing.T, script string) {
	t.Helper()
	fi, err := os.Stat(script)
	if err != nil {
		t.Fatalf("postinst: %v: the package makes its user in its maintainer script", err)
	}
	if fi.Mode()&0o111 == 0 {
		t.Errorf("postinst: mode %v, want an executable maintainer script", fi.Mode())
	}
	made := []string{
		"addgroup --system --quiet ckegen",
		"adduser --system --quiet --ingroup ckegen --home /var/lib/ckegen --no-create-home --shell /usr/sbin/nologin ckegen",
	}
	for _, c := range []struct {
		name   string
		arg    string
		exists string // what getent finds: "group:NAME" and "passwd:NAME" cases
		want   []string
	}{
		{"a fresh host", "configure", "", made},
		{"the user made before (an upgrade)", "configure", "group:ckegen|passwd:ckegen", nil},
		{"the group alone made before", "configure", "group:ckegen", made[1:]},
		{"abort-upgrade", "abort-upgrade", "", nil},
	} {
		dir := t.TempDir()
		log := filepath.Join(dir, "calls")
		stub := func(name, body string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		found := "exit 0"
		if c.exists == "" {
			found = "exit 2"
		}
		stub("getent", `case "$1:$2" in `+orNone(c.exists)+`) `+found+`;; esac; exit 2`)
		stub("addgroup", `echo "addgroup $*" >>`+log)
		stub("adduser", `echo "adduser $*" >>`+log)
		_, errOut, err := runEnv(time.Minute, dir, []string{"PATH=" + dir}, "/bin/sh", script, c.arg)
		if err != nil {
			t.Errorf("postinst %s on %s: %v\n%s", c.arg, c.name, err, errOut)
			continue
		}
		data, _ := os.ReadFile(log)
		var calls []string
		if s := strings.TrimSpace(string(data)); s != "" {
			calls = strings.Split(s, "\n")
		}
		for _, call := range calls {
			if why := notSystemID(strings.Fields(call)); why != "" {
				t.Errorf("postinst %s on %s ran %q: %s", c.arg, c.name, call, why)
			}
		}
		if !slices.Equal(calls, c.want) {
			t.Errorf("postinst %s on %s ran %q, want %q", c.arg, c.name, calls, c.want)
		}
	}
}

// notSystemID says why a command that makes an account (adduser,
// addgroup, useradd, groupadd, as words) does not make a system one with
// an id of the system's choosing, "" when it does: it must say --system,
// and give no id option a number (useradd's --gid may name the group).
func notSystemID(words []string) string {
	if !slices.Contains(words, "--system") && !slices.Contains(words, "-r") {
		return "not a system account (--system): its id would be in the range of people's accounts"
	}
	for i, w := range words {
		opt, val, eq := strings.Cut(w, "=")
		switch opt {
		case "--uid", "-u", "--gid", "-g", "--firstuid", "--lastuid", "--firstgid", "--lastgid":
		default:
			continue
		}
		if !eq && i+1 < len(words) {
			val = words[i+1]
		}
		if _, err := strconv.Atoi(val); err == nil {
			return opt + " " + val + " fixes the id: the system chooses it from its own range (a fixed one, as 10000, may be a person's)"
		}
	}
	return ""
}

// orNone is a shell case pattern that matches nothing when p is empty.
func orNone(p string) string {
	if p == "" {
		return "__none__"
	}
	return p
}
