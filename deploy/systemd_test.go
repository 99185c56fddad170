package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// TestSystemdUnits checks the units an operator installs
// (docs/install.md): the settings it promises (restart on failure, each
// unit's configuration path, the hardening, a dedicated user, the one
// writable path; cke.service as CKE's server, in place of CKE's own unit),
// that no unit of ckegen's daemon names CKE's /etc/cke (it reads its own
// /etc/ckegen), that systemd-analyze verify accepts them without a word,
// that the units' exposure stays where it is, and that the example
// environment file's flags are the daemon's.
//
// systemd-analyze verify checks that each ExecStart program exists. The
// daemon unit runs /usr/local/bin/ckegen, which is not installed here, so
// it verifies a copy whose ExecStart names a ckegen built for the test
// instead, the rest unchanged; cke.service's /usr/local/bin/cke is
// replaced the same way by that ckegen, which only has to exist (TestImage
// runs the image's cke with cke.service's flags). The container unit is
// verified as it is: it runs /usr/bin/podman, which CI installs.
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
		"EnvironmentFile":  "-/etc/default/ckegen",
		"ExecStart":        "/usr/local/bin/ckegen --config /etc/ckegen/config.yml $CKEGEN_OPTS",
	} {
		if got := daemonUnit.get("Service", key); got != want {
			t.Errorf("ckegen.service: %s=%q, want %q", key, got, want)
		}
	}
	checkHardening(t, "ckegen.service", daemonUnit)
	if n := len(daemonUnit["Service"]["ReadWritePaths"]); n != 1 {
		t.Errorf("ckegen.service: %d ReadWritePaths settings, want one (/var/lib/ckegen, where it writes)", n)
	}
	if got := daemonUnit.get("Unit", "Conflicts"); got != "ckegen-container.service" {
		t.Errorf("ckegen.service: Conflicts=%q, want ckegen-container.service (one daemon a host)", got)
	}
	container := parseUnit(t, filepath.Join(dir, "ckegen-container.service"))
	for key, want := range map[string]string{
		"Restart":         "on-failure",
		"EnvironmentFile": "/etc/default/ckegen",
	} {
		if got := container.get("Service", key); got != want {
			t.Errorf("ckegen-container.service: %s=%q, want %q", key, got, want)
		}
	}
	if got := container.get("Unit", "Conflicts"); got != "ckegen.service" {
		t.Errorf("ckegen-container.service: Conflicts=%q, want ckegen.service (one daemon a host)", got)
	}
	exec := container.get("Service", "ExecStart")
	for _, want := range []string{"/usr/bin/podman run ", "--network=host", "--read-only", "--cap-drop=all",
		"--security-opt=no-new-privileges", "--volume=/etc/ckegen:/etc/ckegen:ro",
		"--volume=/var/lib/ckegen:/var/lib/ckegen", `"$$CKEGEN_IMAGE" --config /etc/ckegen/config.yml $$CKEGEN_OPTS`} {
		if !strings.Contains(exec, want) {
			t.Errorf("ckegen-container.service: ExecStart %q lacks %q", exec, want)
		}
	}
	// ckegen's daemon reads its own configuration: no setting of its units
	// names CKE's directory (a volume, a path, a --config).
	for name, u := range map[string]unit{"ckegen.service": daemonUnit, "ckegen-container.service": container} {
		for section, keys := range u {
			for key, values := range keys {
				for _, v := range values {
					if namesCKEDir(v) {
						t.Errorf("%s: [%s] %s=%s names CKE's /etc/cke: ckegen's daemon reads /etc/ckegen", name, section, key, v)
					}
				}
			}
		}
	}

	// cke.service: CKE's server with ckegen inside, in place of CKE's own
	// unit, as CKE's server runs (its user, root, and CKE's configuration).
	ckeUnit := parseUnit(t, filepath.Join(dir, "cke.service"))
	for key, want := range map[string]string{
		"Restart":         "on-failure",
		"User":            "",
		"Group":           "",
		"NoNewPrivileges": "yes",
		"ProtectSystem":   "full",
		"PrivateTmp":      "yes",
		"ExecStart":       "/usr/local/bin/cke --config /etc/cke/config.yml",
	} {
		if got := ckeUnit.get("Service", key); got != want {
			t.Errorf("cke.service: %s=%q, want %q", key, got, want)
		}
	}
	checkHardening(t, "cke.service", ckeUnit)
	if got := strings.Fields(ckeUnit.get("Unit", "Conflicts")); !slices.Equal(got, []string{"ckegen.service", "ckegen-container.service"}) {
		t.Errorf("cke.service: Conflicts=%q, want ckegen.service and ckegen-container.service (ckegen's daemons have no place beside it)", got)
	}
	if d, err := systemdDuration(ckeUnit.get("Service", "TimeoutStopSec")); err != nil || d < 3*time.Minute+5*time.Second {
		t.Errorf("cke.service: TimeoutStopSec=%q, want over 3m5s (CKE's server lets HTTP requests finish for 3 minutes after its 5 s)", ckeUnit.get("Service", "TimeoutStopSec"))
	}
	for _, u := range []struct {
		name string
		u    unit
	}{{"ckegen.service", daemonUnit}, {"ckegen-container.service", container}, {"cke.service", ckeUnit}} {
		if got := u.u.get("Install", "WantedBy"); got != "multi-user.target" {
			t.Errorf("%s: WantedBy=%q, want multi-user.target (started at boot)", u.name, got)
		}
	}

	bin := binaries(t)
	checkEnvFile(t, filepath.Join(dir, "ckegen.env"), filepath.Join(bin, "ckegen"))

	analyze := need(t, "systemd-analyze", "apt-get install -y systemd")
	need(t, "podman", "apt-get install -y podman")
	verifyDir := t.TempDir()
	copyUnit := func(name, from, to string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rewritten := strings.ReplaceAll(string(data), from, to)
		if rewritten == string(data) && from != to {
			t.Fatalf("%s: no %q to point at the test's ckegen", name, from)
		}
		if err := os.WriteFile(filepath.Join(verifyDir, name), []byte(rewritten), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyUnit("ckegen.service", "ExecStart=/usr/local/bin/ckegen ", "ExecStart="+filepath.Join(bin, "ckegen")+" ")
	copyUnit("cke.service", "ExecStart=/usr/local/bin/cke ", "ExecStart="+filepath.Join(bin, "ckegen")+" ")
	copyUnit("ckegen-container.service", "", "")
	for _, name := range []string{"ckegen.service", "ckegen-container.service", "cke.service"} {
		// verify exits 0 on some problems it only warns about (a value it
		// cannot parse, say): any output is a failure too.
		out, errOut, err := runErr(time.Minute, verifyDir, analyze, "verify", "--man=no", "./"+name)
		if err != nil || len(out)+len(errOut) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s%s", name, err, out, errOut)
		}
	}
	// The hardening as systemd rates it: 0 (none exposed) to 10. ckegen's
	// unit rates 3.2 now; cke.service 6.0 (it runs as root, as CKE's
	// server). A lost setting raises them.
	for name, threshold := range map[string]string{"ckegen.service": "40", "cke.service": "65"} {
		out, errOut, err := runErr(time.Minute, verifyDir, analyze, "security", "--offline=true", "--threshold="+threshold, "./"+name)
		if err != nil {
			t.Errorf("systemd-analyze security %s: %v: exposure over %s/10\n%s%s", name, err, threshold, out, errOut)
		}
	}
}

// hardening are the settings both host units have: a network daemon
// needs none of the devices, the kernel's knobs, namespaces, real time,
// set-user-id files, another personality or writable code.
var hardening = map[string]string{
	"PrivateDevices":          "yes",
	"ProtectKernelTunables":   "yes",
	"ProtectKernelModules":    "yes",
	"ProtectKernelLogs":       "yes",
	"ProtectControlGroups":    "yes",
	"ProtectClock":            "yes",
	"ProtectHostname":         "yes",
	"RestrictNamespaces":      "yes",
	"RestrictRealtime":        "yes",
	"RestrictSUIDSGID":        "yes",
	"LockPersonality":         "yes",
	"MemoryDenyWriteExecute":  "yes",
	"SystemCallArchitectures": "native",
}

func checkHardening(t *testing.T, name string, u unit) {
	t.Helper()
	for key, want := range hardening {
		if got := u.get("Service", key); got != want {
			t.Errorf("%s: %s=%q, want %q", name, key, got, want)
		}
	}
}

// systemdDuration parses a time span as systemd writes the short ones:
// 90 (seconds), 90s, 4min, 1min 30s.
func systemdDuration(s string) (time.Duration, error) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, " ", ""), "min", "m")
	if _, err := strconv.Atoi(s); err == nil {
		s += "s"
	}
	return time.ParseDuration(s)
}

// ckeDirRE matches CKE's configuration directory /etc/cke, not /etc/ckegen.
var ckeDirRE = regexp.MustCompile(`/etc/cke($|[^A-Za-z0-9_.-])`)

// namesCKEDir reports whether s names /etc/cke or a path in it.
func namesCKEDir(s string) bool { return ckeDirRE.MatchString(s) }

// readEnvFile reads an environment file of KEY=value lines (a value may be
// double-quoted), comments and blank lines.
func readEnvFile(t *testing.T, file string) map[string]string {
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
	return env
}

// checkEnvFile checks the example /etc/default/ckegen: CKEGEN_OPTS are
// flags the daemon accepts (ckegen parses them all before --version
// prints), with the units' --config, and serve HTTP elsewhere than CKE's
// server's port 10180 on a host they may share; CKEGEN_IMAGE is set
// (TestVersionScheme checks which).
func checkEnvFile(t *testing.T, file, bin string) {
	t.Helper()
	env := readEnvFile(t, file)
	if env["CKEGEN_IMAGE"] == "" {
		t.Errorf("%s: no CKEGEN_IMAGE for the container unit", file)
	}
	opts := strings.Fields(env["CKEGEN_OPTS"])
	if len(opts) == 0 {
		t.Errorf("%s: no CKEGEN_OPTS", file)
	}
	for i, o := range opts {
		addr, ok := strings.CutPrefix(o, "--http=")
		if o == "--http" && i+1 < len(opts) {
			addr, ok = opts[i+1], true
		}
		if ok && strings.HasSuffix(addr, ":10180") {
			t.Errorf("%s: --http %s is CKE's server's port; ckegen's is 10190", file, addr)
		}
		if o == "--config" || strings.HasPrefix(o, "--config=") {
			t.Errorf("%s: CKEGEN_OPTS gives --config, which the units give (/etc/ckegen/config.yml)", file)
		}
	}
	args := append([]string{"--config", "/etc/ckegen/config.yml"}, opts...)
	if out, errOut, err := runErr(time.Minute, "", bin, append(args, "--version")...); err != nil {
		t.Errorf("ckegen %s --version: %v: the example's flags are not the daemon's\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
}

// TestContainerUnitUser runs the container unit's ExecStart as systemd
// would, its $$ and specifiers undone, with stand-ins of id and podman
// (the only programs in its PATH; podman records its arguments): the
// container runs as the host's user and group ckegen, whatever system ids
// they have (not the image's 10000, which lies in the range of people's
// accounts), with the image and the flags of /etc/default/ckegen; and
// without a user ckegen podman is not run and the unit fails.
func TestContainerUnitUser(t *testing.T) {
	exec := parseUnit(t, filepath.Join(root, "deploy", "systemd", "ckegen-container.service")).get("Service", "ExecStart")
	script, ok := strings.CutPrefix(exec, "/bin/sh -c '")
	script, ok2 := strings.CutSuffix(script, "'")
	if !ok || !ok2 || strings.Contains(script, "'") {
		t.Fatalf("ExecStart=%q: want /bin/sh -c 'SCRIPT', the script without single quotes", exec)
	}
	dir := t.TempDir()
	script = strings.NewReplacer("$$", "$", "%t", dir, "%N", "ckegen-container", "/usr/bin/podman", filepath.Join(dir, "podman")).Replace(script)
	stub := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, "podman-args")
	stub("podman", `for a in "$@"; do echo "$a"; done >`+log)
	env := []string{"PATH=" + dir, "CKEGEN_IMAGE=localhost/ckegen:v0.1.0", "CKEGEN_OPTS=--http 0.0.0.0:10190 --interval 1m"}

	// A host whose ckegen has the system ids 998 and 997.
	stub("id", `[ "$2" = ckegen ] || exit 1; case "$1" in -u) echo 998;; -g) echo 997;; *) exit 1;; esac`)
	if _, errOut, err := runEnv(time.Minute, dir, env, "/bin/sh", "-c", script); err != nil {
		t.Fatalf("ExecStart: %v\n%s", err, errOut)
	}
	args := strings.Split(strings.TrimSpace(readFileT(t, log)), "\n")
	if !slices.Contains(args, "--user=998:997") || slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "10000") }) {
		t.Errorf("podman %q: want --user=998:997, the host's ckegen, and no id 10000", args)
	}
	if i := slices.Index(args, "localhost/ckegen:v0.1.0"); i < 0 || !slices.Equal(args[i+1:], []string{"--config", "/etc/ckegen/config.yml", "--http", "0.0.0.0:10190", "--interval", "1m"}) {
		t.Errorf("podman %q: want the image, then --config /etc/ckegen/config.yml and CKEGEN_OPTS' flags, one argument each", args)
	}
	if args[0] != "run" || !slices.Contains(args, "--cidfile="+dir+"/ckegen-container.cid") {
		t.Errorf("podman %q: want run, with the cid file in the runtime directory", args)
	}

	// A host without the user: id fails, podman never runs.
	os.Remove(log)
	stub("id", `echo "id: 'ckegen': no such user" >&2; exit 1`)
	if _, _, err := runEnv(time.Minute, dir, env, "/bin/sh", "-c", script); err == nil {
		t.Error("ExecStart without a user ckegen: exit 0, want a failure")
	}
	if _, err := os.Stat(log); err == nil {
		t.Errorf("ExecStart without a user ckegen ran podman %q", readFileT(t, log))
	}
}

func readFileT(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
