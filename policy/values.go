package policy

import (
	"maps"
	"math"
	"slices"
)

// Values holds the value of every metric of a policy for every machine of
// one tick: one Row per machine, in the order the machines were given, one
// column per metric (Policy.Metrics). NaN stands for "no value".
type Values struct {
	metrics []string
	serials []string // by row
	dups    bool     // a serial was given twice
	rows    map[string]int
	cells   []float64
}

// Row is one machine's metric values by column; NaN (or a column past its
// end, as in a nil Row) is "no value".
type Row []float64

func (r Row) at(col int) float64 {
	if col < 0 || col >= len(r) {
		return math.NaN()
	}
	return r[col]
}

// Get returns the value of column col and whether there is one.
func (r Row) Get(col int) (float64, bool) {
	v := r.at(col)
	return v, !math.IsNaN(v)
}

// NewValues returns a table of the policy's metrics for the machines with
// these serials, with no values yet. A serial given twice keeps its first
// row.
func (p *Policy) NewValues(serials []string) *Values {
	m := len(p.Metrics())
	v := &Values{metrics: p.Metrics(), serials: serials, rows: make(map[string]int, len(serials)), cells: make([]float64, len(serials)*m)}
	for i := range v.cells {
		v.cells[i] = math.NaN()
	}
	for i, s := range serials {
		if _, dup := v.rows[s]; !dup {
			v.rows[s] = i
		} else {
			v.dups = true
		}
	}
	return v
}

// Len is the number of rows.
func (v *Values) Len() int {
	if v == nil || len(v.metrics) == 0 {
		return 0
	}
	return len(v.cells) / len(v.metrics)
}

// Metrics are the column names.
func (v *Values) Metrics() []string {
	if v == nil {
		return nil
	}
	return v.metrics
}

// Index returns the row of the machine with this serial.
func (v *Values) Index(serial string) (int, bool) {
	if v == nil {
		return 0, false
	}
	i, ok := v.rows[serial]
	return i, ok
}

// Row returns row i.
func (v *Values) Row(i int) Row {
	m := len(v.metrics)
	return v.cells[i*m : (i+1)*m : (i+1)*m]
}

// Lookup returns the row of the machine with this serial; nil (no values)
// for an unknown serial or a nil table.
func (v *Values) Lookup(serial string) Row {
	i, ok := v.Index(serial)
	if !ok {
		return nil
	}
	return v.Row(i)
}

// LookupAt is Lookup for a caller that expects the machine at row i (it
// holds the machines in the order the table was made for): row i when it
// belongs to serial, without hashing; otherwise Lookup(serial).
func (v *Values) LookupAt(i int, serial string) Row {
	if v != nil && !v.dups && i >= 0 && i < len(v.serials) && v.serials[i] == serial {
		return v.Row(i)
	}
	return v.Lookup(serial)
}

// Set sets the value of column col in row i. A NaN means no value.
func (v *Values) Set(i, col int, x float64) {
	v.cells[i*len(v.metrics)+col] = x
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	return slices.Sorted(maps.Keys(m))
}
