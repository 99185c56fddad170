package forecast

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/world"
)

// TestBuyIsTheLeastAndLatest: on random data centers, when --buy's
// purchases keep the cluster within its constraints to the end, the
// forecast without --buy that assumes every purchase (--assume-new, each
// rack's machines from the date it is needed) reaches the end too; and
// with any one purchase one machine smaller, or one period later, it
// does not.
func TestBuyIsTheLeastAndLatest(t *testing.T) {
	checked, unfixed := 0, 0
	defer func() {
		t.Logf("%d data centers bought for, %d left failing", checked, unfixed)
		if checked == 0 {
			t.Error("no data center was bought for: the property was never checked")
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		in := drawInput(t)
		if in.Current == nil {
			t.Skip("no cluster")
		}
		w := world.World{In: in, Query: defaultQuery()}
		need := 0
		if in.Constraints.RateModel() {
			need = rapid.SampledFrom([]int{0, 3}).Draw(t, "need")
		}
		o := Options{Until: now.AddDate(4, 0, 0), Resolution: Month, RetireLead: DefaultRetireLead, NeedWorkers: need}
		bought := o
		bought.Buy = &Buy{LeadTime: DefaultLeadTime, RackSize: rapid.SampledFrom([]int{0, 12}).Draw(t, "rack size")}
		f, err := Of(w, bought)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Purchases) == 0 {
			return
		}
		if f.Runway.Reason != None {
			unfixed++
			return
		}
		checked++
		news := assumedNew(f.Purchases)
		with := func(ns []assume.New) *Forecast {
			o := o
			o.New = ns
			got, err := Of(w, o)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := with(news); got.Runway.Reason != None {
			t.Fatalf("with every purchase assumed the runway ends: %s\npurchases: %v", got.Runway.Message, news)
		}
		for k := range news {
			fewer := slices.Clone(news)
			fewer[k].Count--
			if fewer[k].Count == 0 {
				fewer = slices.Delete(fewer, k, k+1)
			}
			if got := with(fewer); got.Runway.Reason == None {
				t.Fatalf("one machine fewer in %v keeps the runway to the end", news[k])
			}
			later := slices.Clone(news)
			later[k].From = Month.next(later[k].From)
			if got := with(later); got.Runway.Reason == None {
				t.Fatalf("%v a period later keeps the runway to the end", news[k])
			}
		}
	})
}

// assumedNew is the purchases as --assume-new specs: one per rack of
// each, from the date it is needed.
func assumedNew(ps []Purchase) []assume.New {
	var out []assume.New
	for _, p := range ps {
		from, err := time.Parse(dateLayout, p.Needed)
		if err != nil {
			panic(err)
		}
		for _, k := range slices.Sorted(maps.Keys(p.Racks)) {
			rack, err := strconv.Atoi(k)
			if err != nil {
				panic(fmt.Sprint(k))
			}
			out = append(out, assume.New{Rack: rack, Role: p.Role, Count: p.Racks[k], From: from, Product: p.Product})
		}
	}
	return out
}
