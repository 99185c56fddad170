package tick

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/storage"
)

// TestChanges: status and history keep the first storage.MaxChanges changes, each
// with its total score, in the JSON they always had.
func TestChanges(t *testing.T) {
	var cs []generator.Change
	for i := range storage.MaxChanges + 5 {
		c := generator.Change{Action: "add", Address: fmt.Sprintf("10.0.0.%d", i), Serial: "s", Reason: "r"}
		if i == 0 {
			c.Score = &generator.Score{Total: 42, Rack: 3}
		}
		cs = append(cs, c)
	}
	got := statusChanges(cs)
	if len(got) != storage.MaxChanges {
		t.Fatalf("%d changes kept, want %d", len(got), storage.MaxChanges)
	}
	data, err := json.Marshal(got[:2])
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"action":"add","address":"10.0.0.0","serial":"s","score":42,"reason":"r"},{"action":"add","address":"10.0.0.1","serial":"s","score":null,"reason":"r"}]`
	if string(data) != want {
		t.Errorf("stored changes\n%s\nwant\n%s", data, want)
	}

	// With a policy: the metric points show, rounded as explanations
	// round them, and the group of an ordered placement is kept.
	pick := generator.Change{Action: "add", Address: "10.0.0.9", Serial: "s9", Reason: "r", Placement: "control-plane", Group: "dedicated",
		Score: &generator.Score{Total: 1003, MetricPoints: -2.33333}}
	gen, err := json.Marshal(pick.Score)
	if err != nil {
		t.Fatal(err)
	}
	data, err = json.Marshal(statusChanges([]generator.Change{pick}))
	if err != nil {
		t.Fatal(err)
	}
	want = `[{"action":"add","address":"10.0.0.9","serial":"s9","score":` + string(gen) + `,"reason":"r","placement":"control-plane","group":"dedicated"}]`
	if string(data) != want || string(gen) != "1000.667" {
		t.Errorf("stored change with metric points\n%s\nwant\n%s (the explanation's score is %s)", data, want, gen)
	}
}
