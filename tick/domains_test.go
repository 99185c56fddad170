package tick

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/reason"
)

// cpRacks restricts control planes to racks 1 and 2: three control
// planes in two racks, one of which holds two.
const cpRacks = `{"placements": {"control-plane": {"constraints": ["topology.kubernetes.io/zone in (rack1, rack2)"]}}}`

// quorumWords is what the status says of a domain at risk.
const quorumWords = " holds 2 of 3 control planes: losing it breaks etcd's quorum"

// withPrefix counts the strings of ss that begin with prefix.
func withPrefix(ss []string, prefix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// cpsByRack counts the control planes of c by their rack label.
func cpsByRack(c *cluster.Cluster) map[string]int {
	out := map[string]int{}
	for _, n := range cpNodes(c) {
		out[n.Labels[labels.Rack]]++
	}
	return out
}

// TestDomainsEveryTick: every tick counts the control planes of the
// cluster it leaves by failure domain. With the control planes held to
// two racks, the status's domains row names the rack that holds two of
// three, with its addresses and in words, and no tick warning says it (a
// standing state, not something the tick found); the leader exports the
// gauge of domains at risk (1) and the control planes per domain. Under
// spread: quorum with nowhere to go, the generator's warning says why no
// control plane moves, once. With the racks
// released, the tick moves one out: nothing at risk, gauge 0, no
// warning. By a label (a power feed), the status and the gauge name the
// feed.
func TestDomainsEveryTick(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	putPolicy(t, f, cpRacks)
	leader := f.lead(t)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader))

	c := f.cluster(t)
	byRack := cpsByRack(c)
	var full string
	for rack, n := range byRack {
		if n == 2 {
			full = rack
		}
	}
	if full == "" || len(byRack) != 2 {
		t.Fatalf("control planes by rack %v: want two in one of racks 1 and 2", byRack)
	}
	var fullAddrs []string
	for _, n := range cpNodes(c) {
		if n.Labels[labels.Rack] == full {
			fullAddrs = append(fullAddrs, n.Address)
		}
	}
	words := "rack " + full + quorumWords
	st := f.status(t)
	fd := st.Domains
	if fd == nil || fd.FailureDomain != "rack" || fd.ControlPlanes != 3 || fd.Quorum != 2 || !slices.Equal(fd.AtRisk, []string{full}) ||
		!slices.Equal(fd.Warnings, []string{words}) || len(fd.Domains) != 2 {
		t.Fatalf("status domains %+v, want rack %s at risk", fd, full)
	}
	for _, dom := range fd.Domains {
		if want := dom.Domain == full; dom.QuorumLost != want || want && !slices.Equal(dom.ControlPlanes, fullAddrs) || !want && len(dom.ControlPlanes) != 1 {
			t.Errorf("domain %+v; want rack %s with %v lost", dom, full, fullAddrs)
		}
	}
	if n := withPrefix(st.Warnings, words); n != 0 {
		t.Errorf("status warnings %q: %q %d times, want it in the domains row only", st.Warnings, words, n)
	}
	scraped := scrape(t, d)
	if got := series(scraped, "ckegen_failure_domains_at_risk"); !slices.Equal(got, []string{"ckegen_failure_domains_at_risk 1"}) {
		t.Errorf("at risk: %q", got)
	}
	var wantCPs []string
	for _, rack := range []string{"1", "2"} {
		wantCPs = append(wantCPs, fmt.Sprintf(`ckegen_failure_domain_control_planes{domain="%s"} %d`, rack, byRack[rack]))
	}
	if got := series(scraped, "ckegen_failure_domain_control_planes"); !slices.Equal(got, wantCPs) {
		t.Errorf("control planes per domain: %q, want %q", got, wantCPs)
	}

	// spread: quorum with the control planes held to two racks: no move,
	// the generator's warning says why, the status says it once.
	putPolicy(t, f, `{"placements": {"control-plane": {"spread": "quorum", "constraints": ["topology.kubernetes.io/zone in (rack1, rack2)"]}}}`)
	must(t, d.runOnce(ctx, leader))
	st = f.status(t)
	if n := withPrefix(st.Warnings, words); n != 1 || !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.HasPrefix(w, words+"; no control-plane candidate") }) {
		t.Errorf("spread quorum held: warnings %q; want the generator's %q with why, once", st.Warnings, words)
	}
	if st.Domains == nil || !slices.Equal(st.Domains.AtRisk, []string{full}) {
		t.Errorf("spread quorum held: domains %+v", st.Domains)
	}

	// Released: one tick moves one control plane out; nothing at risk.
	putPolicy(t, f, `{"placements": {"control-plane": {"spread": "quorum"}}}`)
	must(t, d.runOnce(ctx, leader))
	st = f.status(t)
	if st.LastOp != generator.OpSpreadCP || st.Domains == nil || len(st.Domains.AtRisk) != 0 || len(st.Domains.Domains) != 3 {
		t.Fatalf("released: op %q, domains %+v; want spread control plane, 3 racks of one", st.LastOp, st.Domains)
	}
	if n := withPrefix(st.Warnings, "rack "); n != 0 {
		t.Errorf("released: warnings %q", st.Warnings)
	}
	if got := series(scrape(t, d), "ckegen_failure_domains_at_risk"); !slices.Equal(got, []string{"ckegen_failure_domains_at_risk 0"}) {
		t.Errorf("released: at risk %q", got)
	}

	// By a power feed: two of the control planes on feed a.
	c = f.cluster(t)
	for i, n := range cpNodes(c) {
		feed := "a"
		if i == 2 {
			feed = "b"
		}
		must(t, f.store.SetLabel(serial(n), "power-feed", feed))
	}
	putPolicy(t, f, `{"failureDomain": {"label": "power-feed"}}`)
	must(t, d.runOnce(ctx, leader))
	st = f.status(t)
	if fd := st.Domains; fd == nil || fd.FailureDomain != "power-feed" || !slices.Equal(fd.AtRisk, []string{"a"}) ||
		!slices.Equal(fd.Warnings, []string{"power-feed a" + quorumWords}) || withPrefix(st.Warnings, "power-feed a") != 0 {
		t.Errorf("by power feed: domains %+v, warnings %q", st.Domains, st.Warnings)
	}
	if got := series(scrape(t, d), "ckegen_failure_domain_control_planes"); !slices.Equal(got, []string{
		`ckegen_failure_domain_control_planes{domain="a"} 2`, `ckegen_failure_domain_control_planes{domain="b"} 1`}) {
		t.Errorf("by power feed: %q", got)
	}
}

// TestDomainsKeptAndCleared: a tick that cannot read sabakan keeps the
// last count (the gauge does not fall to 0 while sabakan is away); a
// disabled integration shows none and exports nothing.
func TestDomainsKeptAndCleared(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	putPolicy(t, f, cpRacks)
	leader := f.lead(t)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader))
	before := f.status(t).Domains
	if before == nil || len(before.AtRisk) != 1 {
		t.Fatalf("domains %+v", before)
	}

	f.site.Server.Close()
	if err := d.runOnce(ctx, leader); reason.Of(err) != reason.SabakanUnreachable {
		t.Fatalf("sabakan closed: %v", err)
	}
	if st := f.status(t); st.Domains == nil || !slices.Equal(st.Domains.AtRisk, before.AtRisk) {
		t.Errorf("sabakan unreachable: domains %+v, want the last %+v", st.Domains, before)
	}
	if got := series(scrape(t, d), "ckegen_failure_domains_at_risk"); !slices.Equal(got, []string{"ckegen_failure_domains_at_risk 1"}) {
		t.Errorf("sabakan unreachable: %q", got)
	}

	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Domains != nil {
		t.Errorf("disabled: domains %+v", st.Domains)
	}
	if got := series(scrape(t, d), "ckegen_failure_domain"); len(got) != 0 {
		t.Errorf("disabled: %q", got)
	}
}

// TestDomainsFewControlPlanes: with 2 control planes in two racks, both
// racks break the quorum: the status and the gauge say so, and no
// warning repeats it for each (the constraints' warning of an even count
// is the one).
func TestDomainsFewControlPlanes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount = 2
	must(t, f.st.SetConstraints(ctx, c))
	leader := f.lead(t)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader))
	st := f.status(t)
	if fd := st.Domains; fd == nil || fd.ControlPlanes != 2 || fd.Quorum != 2 || len(fd.AtRisk) != 2 || len(fd.Warnings) != 2 {
		t.Fatalf("domains %+v, want both racks at risk", st.Domains)
	}
	if n := withPrefix(st.Warnings, "rack "); n != 0 {
		t.Errorf("warnings %q: none of a rack wanted", st.Warnings)
	}
	if got := series(scrape(t, d), "ckegen_failure_domains_at_risk"); !slices.Equal(got, []string{"ckegen_failure_domains_at_risk 2"}) {
		t.Errorf("at risk: %q", got)
	}
}
