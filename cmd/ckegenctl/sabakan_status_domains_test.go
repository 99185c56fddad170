package main

import (
	"strings"
	"testing"

	"github.com/ckegen/ckegen/storage"
)

// TestStatusTableDomains: the status's failure domains are an AT RISK row
// in its words (said there, not again under WARNINGS) and a QUORUM row
// with where the control planes are; by a label, the label names them;
// the table's columns stay as wide as without them; a status without
// domains has neither row.
func TestStatusTableDomains(t *testing.T) {
	words := "rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum"
	st := storage.Status{Result: "ok", Leader: "h", Warnings: []string{"another warning", words},
		Domains: &storage.FailureDomains{FailureDomain: "rack", ControlPlanes: 3, Quorum: 2, AtRisk: []string{"4"}, Warnings: []string{words},
			Domains: []storage.DomainControlPlanes{{Domain: "4", ControlPlanes: []string{"10.0.4.12", "10.0.4.14"}, QuorumLost: true},
				{Domain: "11", ControlPlanes: []string{"10.0.11.19"}}}}}
	var b strings.Builder
	if err := statusTable(&b, st); err != nil {
		t.Fatal(err)
	}
	want := "RESULT        ok\n" +
		"AT RISK       " + words + "\n" +
		"QUORUM        quorum 2 of 3: etcd keeps working while 2 control planes are up; by rack: 2 in rack 4, 1 in rack 11\n" +
		"WARNINGS      another warning\n" +
		"SINCE         -\n"
	if !strings.HasPrefix(b.String(), want) || strings.Count(b.String(), words) != 1 {
		t.Errorf("status table:\n%s\nwant it to start with\n%s", b.String(), want)
	}

	feed := "power-feed a holds 2 of 3 control planes: losing it breaks etcd's quorum"
	st = storage.Status{Result: "ok", Warnings: []string{feed}, Domains: &storage.FailureDomains{FailureDomain: "power-feed", ControlPlanes: 3, Quorum: 2,
		AtRisk: []string{"a"}, Warnings: []string{feed}, Domains: []storage.DomainControlPlanes{{Domain: "a", ControlPlanes: []string{"x", "y"}, QuorumLost: true},
			{Domain: "S1 (no power-feed label)", ControlPlanes: []string{"z"}}}}}
	b.Reset()
	if err := statusTable(&b, st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "QUORUM        quorum 2 of 3: etcd keeps working while 2 control planes are up; by power-feed: 2 in power-feed a, 1 in machine S1 (no power-feed label)\n") ||
		strings.Contains(b.String(), "WARNINGS") {
		t.Errorf("by power feed:\n%s", b.String())
	}

	b.Reset()
	if err := statusTable(&b, storage.Status{Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "AT RISK") || strings.Contains(b.String(), "QUORUM") {
		t.Errorf("no domains:\n%s", b.String())
	}
}

// TestQuorumWords: the QUORUM row says what the quorum is, how many
// control planes must stay up, not how many are up.
func TestQuorumWords(t *testing.T) {
	for _, c := range []struct {
		quorum, cps int
		want        string
	}{
		{2, 3, "quorum 2 of 3: etcd keeps working while 2 control planes are up"},
		{3, 5, "quorum 3 of 5: etcd keeps working while 3 control planes are up"},
		{1, 1, "quorum 1 of 1: etcd keeps working while 1 control plane is up"},
	} {
		if got := quorumWords(c.quorum, c.cps); got != c.want {
			t.Errorf("quorumWords(%d, %d) = %q, want %q", c.quorum, c.cps, got, c.want)
		}
	}
}
