package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unit is a systemd unit file's settings: section, then key, then every
// value in order (a key may be given more than once).
type unit map[string]map[string][]string

// parseUnit reads a unit file: sections, key=value lines, comments and
// backslash continuations.
func parseUnit(t *testing.T, file string) unit {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	var cont strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont.Len() > 0 || strings.HasSuffix(line, `\`) {
			cont.WriteString(strings.TrimSuffix(line, `\`))
			if strings.HasSuffix(line, `\`) {
				cont.WriteString(" ")
				continue
			}
			line = cont.String()
			cont.Reset()
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a setting in a section: %q", file, n, line)
			}
			k, v = strings.TrimSpace(k), strings.Join(strings.Fields(v), " ")
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// get is the last value of a setting ("" when it is not set).
func (u unit) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// TestSystemdUnits checks the units an operator installs (README
// "Install"): the settings the README promises (restart on failure, CKE's
// configuration path, the hardening, a dedicated user, the one writable
// path), that systemd-analyze verify accepts them without a word, that the
// daemon unit's exposure stays low, and that the example environment
// file's flags are the daemon's.
//
// systemd-analyze verify checks that each ExecStart program exists. The
// daemon unit runs /usr/local/bin/ckegen, which is not installed here, so it
// verifies a copy whose ExecStart names a ckegen built for the test instead,
// the rest unchanged. The container unit is verified as it is: it runs
// /usr/bin/podman, which CI installs.
func TestSystemdUnits(t *testing.T) {
	dir := filepath.Join(root, "deploy", "systemd")
	daemonUnit := parseUnit(t, filepath.Join(dir, "ckegen.service"))
	for key, want := range map[string]string{
		"Restart":          "on-failure",
		"User":             "ckegen",
		"Group":            "ckegen",
		"NoNewPrivileges":  "yes",
		"ProtectSystem":    "strict",
		"ProtectHome":      "yes",
		"PrivateTmp":       "yes",
		"ReadWritePaths":   "/var/lib/ckegen",
		"StateDirectory":   "ckegen",
		"WorkingDirectory": "/var/lib/ckegen",
		"ExecStart":        "/usr/local/bin/ckegen --config /etc/cke/config.yml $CKEGEN_OPTS",
	} {
		if got := daemonUnit.get("Service", key); got != want {
			t.Errorf("ckegen.service: %s=%q, want %q", key, got, want)
		}
	}
	if n := len(daemonUnit["Service"]["ReadWritePaths"]); n != 1 {
		t.Errorf("ckegen.service: %d ReadWritePaths settings, want one (/var/lib/ckegen, where it writes)", n)
	}
	container := parseUnit(t, filepath.Join(dir, "ckegen-container.service"))
	if got := container.get("Service", "Restart"); got != "on-failure" {
		t.Errorf("ckegen-container.service: Restart=%q, want on-failure", got)
	}
	exec := container.get("Service", "ExecStart")
	for _, want := range []string{"/usr/bin/podman run ", "--network=host", "--read-only", "--cap-drop=all",
		"--security-opt=no-new-privileges", "--user=10000:10000", "--volume=/etc/cke:/etc/cke:ro",
		"--volume=/var/lib/ckegen:/var/lib/ckegen", "${CKEGEN_IMAGE} --config /etc/cke/config.yml $CKEGEN_OPTS"} {
		if !strings.Contains(exec, want) {
			t.Errorf("ckegen-container.service: ExecStart %q lacks %q", exec, want)
		}
	}

	bin := binaries(t)
	checkEnvFile(t, filepath.Join(dir, "ckegen.env"), filepath.Join(bin, "ckegen"))

	analyze := need(t, "systemd-analyze", "apt-get install -y systemd")
	need(t, "podman", "apt-get install -y podman")
	verifyDir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dir, "ckegen.service"))
	if err != nil {
		t.Fatal(err)
	}
	rewritten := strings.ReplaceAll(string(data), "ExecStart=/usr/local/bin/ckegen ", "ExecStart="+filepath.Join(bin, "ckegen")+" ")
	if rewritten == string(data) {
		t.Fatal("ckegen.service: no ExecStart=/usr/local/bin/ckegen to point at the test's ckegen")
	}
	if err := os.WriteFile(filepath.Join(verifyDir, "ckegen.service"), []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join(dir, "ckegen-container.service"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(verifyDir, "ckegen-container.service"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ckegen.service", "ckegen-container.service"} {
		// verify exits 0 on some problems it only warns about (a value it
		// cannot parse, say): any output is a failure too.
		out, errOut, err := runErr(time.Minute, verifyDir, analyze, "verify", "--man=no", "./"+name)
		if err != nil || len(out)+len(errOut) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s%s", name, err, out, errOut)
		}
	}
	// The hardening as systemd rates it: 0 (none exposed) to 10. The unit
	// rates 3.2 now; a lost setting raises it.
	out, errOut, err := runErr(time.Minute, verifyDir, analyze, "security", "--offline=true", "--threshold=40", "./ckegen.service")
	if err != nil {
		t.Errorf("systemd-analyze security ckegen.service: %v: exposure over 4.0\n%s%s", err, out, errOut)
	}
}

// checkEnvFile checks the example /etc/default/ckegen: CKEGEN_OPTS are
// flags the daemon accepts (ckegen parses them all before --version prints),
// and CKEGEN_IMAGE is set.
func checkEnvFile(t *testing.T, file, bin string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: not KEY=value: %q", file, n+1, line)
		}
		env[k] = strings.Trim(v, `"`)
	}
	if env["CKEGEN_IMAGE"] == "" {
		t.Errorf("%s: no CKEGEN_IMAGE for the container unit", file)
	}
	opts := strings.Fields(env["CKEGEN_OPTS"])
	if len(opts) == 0 {
		t.Errorf("%s: no CKEGEN_OPTS", file)
	}
	if out, errOut, err := runErr(time.Minute, "", bin, append(opts, "--version")...); err != nil {
		t.Errorf("ckegen %s --version: %v: the example's flags are not the daemon's\n%s%s", strings.Join(opts, " "), err, out, errOut)
	}
}
