package forecast

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/world"
)

// buySite is 4 racks of 4 compute machines (product R1), 3 control
// planes and minimum-workers 11; rack 3's machines retire on 2027-06-15.
func buySite(t *testing.T) world.World {
	t.Helper()
	var ms []*machine.Machine
	for rack := range 4 {
		for i := 1; i <= 4; i++ {
			retire := ""
			if rack == 3 {
				retire = "2027-06-15"
			}
			m := mk("s"+string(rune('a'+rack))+string(rune('0'+i)), rack, i, "compute", retire)
			m.Spec.Labels = []machine.Label{{Name: machine.ProductLabel, Value: "R1"}}
			ms = append(ms, m)
		}
	}
	in := generator.Input{Template: exampleTemplate(t), Constraints: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 11},
		Machines: ms, Now: now, RetireWait: generator.DefaultRetireWait}
	res, err := generator.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Current = res.Cluster
	return world.World{In: in, Query: defaultQuery()}
}

// TestBuyWhatRetiresShort: rack 3 retiring (RETIRING from 2027-05-01)
// leaves 9 HEALTHY workers of the 11 needed; --buy buys the workers short on
// that date, of the product the compute machines have, ordered the lead
// time before, spread over the racks; the runway then reaches the end,
// while the runway if nothing is bought ends on 2027-04-30. The text
// begins with the purchases; the CSV has a header and a row each.
func TestBuyWhatRetiresShort(t *testing.T) {
	w := buySite(t)
	f, err := Of(w, Options{Until: date("2028-01-01"), RetireLead: DefaultRetireLead, Buy: &Buy{LeadTime: DefaultLeadTime}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Unbought == nil || f.Unbought.Until != "2027-04-30" || f.Runway.Reason != None {
		t.Fatalf("unbought %+v, runway %+v", f.Unbought, f.Runway)
	}
	// The 2 workers short, split by the template's weights (compute and
	// storage, 1.0 each), the compute ones of the compute machines'
	// product.
	if len(f.Purchases) != 2 {
		t.Fatalf("purchases %+v", f.Purchases)
	}
	for k, role := range []string{"compute", "storage"} {
		p := f.Purchases[k]
		if p.Role != role || p.Needed != "2027-05-01" || p.OrderBy != "2027-01-31" || p.Overdue || p.Count != 1 || len(p.Racks) != 1 {
			t.Errorf("purchase %d: %+v", k, p)
		}
	}
	if f.Purchases[0].Product != "R1" || f.Purchases[1].Product != "" {
		t.Errorf("products %q, %q", f.Purchases[0].Product, f.Purchases[1].Product)
	}
	text := string(f.Text())
	if !strings.HasPrefix(text, "purchases: 2 purchases, first order by 2027-01-31\n") || !strings.Contains(text, "if nothing is bought: the cluster meets its constraints until 2027-04-30") {
		t.Errorf("text:\n%s", text)
	}
	var b bytes.Buffer
	if err := f.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "order_by,overdue,needed,role,product,count,racks,reason" || !strings.HasPrefix(lines[1], "2027-01-31,false,2027-05-01,compute,R1,1,") {
		t.Errorf("csv:\n%s", b.String())
	}
	// Made-up machines: in 240.0.0.0/4, in every output.
	for _, a := range f.MadeUp {
		if !a.Bought || !strings.HasPrefix(a.First, "made-up-20270501-"+a.Role+"-") {
			t.Errorf("arrival %+v", a)
		}
	}
}

// TestAssumeNewArrives: machines assumed new count from the first event
// on or after their from date, and not before.
func TestAssumeNewArrives(t *testing.T) {
	w := buySite(t)
	n, err := assume.ParseNew("rack=1,role=compute,count=3,from=2027-04-15")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Of(w, Options{Until: date("2028-01-01"), RetireLead: DefaultRetireLead, New: []assume.New{n}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range f.Events {
		if (ev.Arriving == 3) != (ev.Date == "2027-05-01") {
			t.Errorf("%s: %d arriving", ev.Date, ev.Arriving)
		}
	}
	if f.Runway.Reason != None {
		t.Errorf("runway %s", f.Runway.Message)
	}
	if len(f.MadeUp) != 1 || f.MadeUp[0].Bought || f.MadeUp[0].Date != "2027-05-01" || f.MadeUp[0].Retire != "2032-04-13" {
		t.Errorf("made up %+v", f.MadeUp)
	}
	// A real machine in 240.0.0.0/4 is refused.
	w.In.Machines[0].Spec.IPv4 = []string{"240.0.0.9"}
	if _, err := Of(w, Options{Until: date("2028-01-01"), New: []assume.New{n}}); err == nil || !strings.Contains(err.Error(), "240.0.0.0/4") {
		t.Errorf("a real machine in 240.0.0.0/4: %v", err)
	}
}

// TestBuyWhere: --buy-racks puts every machine in the racks given; with
// --rack-size the racks are full (4 machines each), so the purchase
// takes a new rack, the next number, and says so.
func TestBuyWhere(t *testing.T) {
	w := buySite(t)
	o := Options{Until: date("2028-01-01"), RetireLead: DefaultRetireLead, Buy: &Buy{LeadTime: DefaultLeadTime, Racks: []int{1}}}
	f, err := Of(w, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Purchases {
		if len(p.Racks) != 1 || p.Racks["1"] != p.Count {
			t.Errorf("--buy-racks 1: %+v", p)
		}
	}
	o.Buy = &Buy{LeadTime: DefaultLeadTime, RackSize: 4}
	if f, err = Of(w, o); err != nil {
		t.Fatal(err)
	}
	if f.Runway.Reason != None || len(f.Purchases) != 2 {
		t.Fatalf("runway %s, purchases %+v", f.Runway.Message, f.Purchases)
	}
	// On 2027-05-01 rack 3's machines are RETIRING, still in sabakan's
	// answer and in their rack.
	for _, p := range f.Purchases {
		if len(p.Racks) != 1 || p.Racks["4"] != 1 {
			t.Errorf("--rack-size 4: %+v", p)
		}
	}
	if r := f.Purchases[0].Reason; !strings.HasSuffix(r, "; no rack has room (rack size 4): a new rack is needed, rack 4") {
		t.Errorf("reason %q", r)
	}
}

// TestBuyControlPlane: in the rate model without a need, a control
// plane that retires with nothing to replace it (3 machines, all
// control planes) buys one machine of the control plane's role, in a
// rack whose domain holds no other control plane, and nothing else.
func TestBuyControlPlane(t *testing.T) {
	var ms []*machine.Machine
	for rack := range 3 {
		retire := ""
		if rack == 0 {
			retire = "2027-06-15"
		}
		ms = append(ms, mk("c"+string(rune('0'+rack)), rack, 1, "compute", retire))
	}
	rate := 100
	in := generator.Input{Template: exampleTemplate(t), Constraints: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: &rate},
		Machines: ms, Now: now, RetireWait: generator.DefaultRetireWait}
	res, err := generator.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Current = res.Cluster
	w := world.World{In: in, Query: defaultQuery()}
	f, err := Of(w, Options{Until: date("2028-01-01"), RetireLead: DefaultRetireLead, Buy: &Buy{LeadTime: DefaultLeadTime}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Unbought.Reason != NoControlPlaneCandidate {
		t.Errorf("unbought: %+v", f.Unbought)
	}
	if len(f.Purchases) != 1 || f.Purchases[0].Role != "compute" || f.Purchases[0].Count != 1 || f.Runway.Reason != None {
		t.Fatalf("purchases %+v, runway %s", f.Purchases, f.Runway.Message)
	}
	cps := map[string]bool{}
	for _, n := range in.Current.Nodes {
		if n.ControlPlane {
			cps[n.Labels["cke.cybozu.com/rack"]] = true
		}
	}
	for k := range f.Purchases[0].Racks {
		if cps[k] && k != "0" {
			t.Errorf("the candidate went to rack %s, which holds a control plane (%v)", k, cps)
		}
	}
}
