package machine

import (
	"os"
	"testing"
)

// FuzzParse: no machines file makes parsing or sanitizing panic; Parse
// reads what encoding/json's path reads or gives its error, saying where
// (checkParse); and what Sanitize keeps has unique serials and addresses.
func FuzzParse(f *testing.F) {
	f.Add([]byte("[" + one + "]"))
	f.Add([]byte(`{"data":{"searchMachines":[` + one + `]}}`))
	f.Add([]byte(`[{"spec":{"serial":"a","ipv4":["x"]},"status":{"state":"HEALTHY"}}]`))
	f.Add([]byte("[\n" + one + ",\n"))
	f.Add([]byte(`[{"spec":{"serial":"a","rack":"1","registerDate":"x"},"status":{"state":"HEALTHY","timestamp":3}}]`))
	if data, err := os.ReadFile("../examples/machines.json"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
		ms, err := Parse(data)
		if err != nil {
			return
		}
		kept, _ := Sanitize(ms, func(name, value string) error { return nil })
		serials, addrs := map[string]bool{}, map[string]bool{}
		for _, m := range kept {
			if serials[m.Spec.Serial] || addrs[m.Address()] || m.Address() == "" {
				t.Fatalf("Sanitize kept a duplicate or address-less machine: %+v", m.Spec)
			}
			serials[m.Spec.Serial], addrs[m.Address()] = true, true
		}
	})
}
