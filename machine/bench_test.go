package machine_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
)

// inventory20000 is a synthetic data center of 20,000 machines (500 racks
// of 40), as sabakan would return it.
func inventory20000() []machine.Machine {
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o.Racks, o.PerRack = 500, 40
	return dcgen.Machines(o)
}

// BenchmarkParse20000: a 20,000-machine file (the CLI's --machines),
// compact as the compatible server writes it and indented as
// examples/machines.json is, into machines: Parse (impl=scanner) beside
// the same steps on jsontext's Decoder (impl=jsontext: the value, its
// decoding, Validate), docs/design.md D18.
func BenchmarkParse20000(b *testing.B) {
	for _, in := range files20000(b) {
		b.Run("in="+in.name+"/impl=scanner", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := machine.Parse(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("in="+in.name+"/impl=jsontext", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				ms, ok := machine.DecodeListText(bytes.TrimSpace(in.data), false)
				if !ok {
					b.Fatal("the jsontext candidate gave up")
				}
				if err := machine.Validate(ms); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// files20000 are a 20,000-machine list written compact and indented.
func files20000(b *testing.B) []input {
	compact, err := json.Marshal(inventory20000())
	if err != nil {
		b.Fatal(err)
	}
	indented, err := json.MarshalIndent(inventory20000(), "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	return []input{{"compact", compact, false}, {"indented", indented, false}}
}

type input struct {
	name     string
	data     []byte
	envelope bool
}

// BenchmarkSanitize20000: sanitizing 20,000 machines with the label
// validator the daemon and the CLI use.
func BenchmarkSanitize20000(b *testing.B) {
	ms := inventory20000()
	b.ReportAllocs()
	for b.Loop() {
		machine.Sanitize(ms, labels.ValidateSabakanLabel)
	}
}

// BenchmarkCheckAndSanitize100000: the whole-answer check (Validate) and
// sanitizing of 100,000 machines, as every tick does with sabakan's
// answer.
func BenchmarkCheckAndSanitize100000(b *testing.B) {
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o.Racks, o.PerRack = 2500, 40
	ms := dcgen.Machines(o)
	b.ReportAllocs()
	for b.Loop() {
		if err := machine.Validate(ms); err != nil {
			b.Fatal(err)
		}
		machine.Sanitize(ms, labels.ValidateSabakanLabel)
	}
}

// BenchmarkDecodeList20000: the one-pass decoding of 20,000 machines:
// sabakan's answer as the compatible server writes it (in=answer), and a
// list compact and indented; DecodeList (impl=scanner) beside the
// candidate on jsontext's Decoder (impl=jsontext), encoding/json's and
// json/v2's (github.com/go-json-experiment/json, strict as
// internal/strictjson is): docs/design.md D18.
func BenchmarkDecodeList20000(b *testing.B) {
	answer, err := json.Marshal(map[string]any{"data": map[string]any{"searchMachines": inventory20000()}})
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range append([]input{{"answer", answer, true}}, files20000(b)...) {
		for _, impl := range []struct {
			name   string
			decode func([]byte, bool) ([]machine.Machine, bool)
		}{{"scanner", machine.DecodeList}, {"jsontext", machine.DecodeListText}} {
			b.Run("in="+in.name+"/impl="+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, ok := impl.decode(in.data, in.envelope); !ok {
						b.Fatal(impl.name, " gave up")
					}
				}
			})
		}
		if in.envelope {
			continue
		}
		b.Run("in="+in.name+"/impl=encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				var ms []machine.Machine
				if err := json.Unmarshal(in.data, &ms); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("in="+in.name+"/impl=json-v2", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				var ms []machine.Machine
				if err := jsonv2.Unmarshal(in.data, &ms, jsonv2.RejectUnknownMembers(true)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
