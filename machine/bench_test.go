package machine_test

import (
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

// BenchmarkParse20000: a 20,000-machine file (JSON array) into machines.
func BenchmarkParse20000(b *testing.B) {
	data, err := json.Marshal(inventory20000())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := machine.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
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

// BenchmarkDecodeList20000: the one-pass decoding of a 20,000-machine
// file, in the shape the compatible server writes (compact) and as
// examples/machines.json is (indented), beside encoding/json's and
// json/v2's (github.com/go-json-experiment/json, strict as
// internal/strictjson is): docs/design.md D18.
func BenchmarkDecodeList20000(b *testing.B) {
	compact, err := json.Marshal(inventory20000())
	if err != nil {
		b.Fatal(err)
	}
	indented, err := json.MarshalIndent(inventory20000(), "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"compact", compact}, {"indented", indented}} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := machine.DecodeList(in.data, false); !ok {
					b.Fatal("DecodeList gave up")
				}
			}
		})
		b.Run(in.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				var ms []machine.Machine
				if err := json.Unmarshal(in.data, &ms); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/json-v2", func(b *testing.B) {
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
