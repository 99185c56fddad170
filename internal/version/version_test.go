package version

import (
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestLinkTimeVersionWins(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.8.7"
	if got := String(); got != "v9.8.7" {
		t.Fatalf("String() = %q, want the link-time version v9.8.7", got)
	}
	Version = ""
	if got := String(); got == "" {
		t.Fatal("String() is empty without a link-time version; want the build info's version or devel")
	}
}

// TestCKEVersionIsCKEServers: CKEVersion is the CKE release ckeserver/'s
// go.mod requires, the one cke is built on (make bump-cke moves both).
func TestCKEVersionIsCKEServers(t *testing.T) {
	data, err := os.ReadFile("../../ckeserver/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "github.com/cybozu-go/cke" {
			got = append(got, f[1])
		}
	}
	if len(got) != 1 || got[0] != CKEVersion {
		t.Errorf("ckeserver/go.mod requires github.com/cybozu-go/cke %q; CKEVersion is %q (make bump-cke VERSION=... moves both)", got, CKEVersion)
	}
}

// TestBuildInfo: the gauge is 1, with the version, the commit, the CKE
// release and the mode it was made for, and its name and labels only.
func TestBuildInfo(t *testing.T) {
	oldV, oldR := Version, Revision
	t.Cleanup(func() { Version, Revision = oldV, oldR })
	Version, Revision = "v1.2.3", "fedcba9876543210"
	reg := prometheus.NewRegistry()
	reg.MustRegister(BuildInfo(ModeInsideCKE))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "ckegen_build_info" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v", mfs)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": "v1.2.3", "commit": "fedcba987654", "cke_version": CKEVersion, "mode": "inside-cke"}
	if !maps.Equal(labels, want) || m.GetGauge().GetValue() != 1 {
		t.Errorf("ckegen_build_info %v = %v, want %v = 1", labels, m.GetGauge().GetValue(), want)
	}
}

// TestBuildInfoDocumented: the series and both modes are in the documents
// an operator reads, the daemon's and that of CKE's server with ckegen
// inside.
func TestBuildInfoDocumented(t *testing.T) {
	for _, f := range []string{"../../docs/daemon.md", "../../docs/inside-cke.md"} {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"`ckegen_build_info{version, commit, cke_version, mode}`", `mode="` + ModeDaemon + `"`, `mode="` + ModeInsideCKE + `"`} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("%s does not say %s", f, want)
			}
		}
	}
}
