package liveview

// Band is a run of racks drawn side by side, the rows shared: racks whose
// machines have the same index in rack show them on one row.
type Band struct {
	Racks []Rack
	// Rows holds the index in rack shown on each row, ascending; an index
	// has as many rows as the most machines one rack has with it.
	Rows []int
	// CellRow[k][j] is the row of cell j of Racks[k].
	CellRow [][]int
}

// Bands cuts the racks into bands of at most perBand racks (at least one).
// The work is linear in the cells times the racks of a band.
func (m *Map) Bands(perBand int) []Band {
	perBand = max(1, perBand)
	var bands []Band
	for start := 0; start < len(m.Racks); start += perBand {
		bands = append(bands, layout(m.Racks[start:min(start+perBand, len(m.Racks))]))
	}
	return bands
}

func layout(racks []Rack) Band {
	b := Band{Racks: racks, CellRow: make([][]int, len(racks))}
	for k, r := range racks {
		b.CellRow[k] = make([]int, len(r.Cells))
	}
	next := make([]int, len(racks)) // the next cell of each rack
	for {
		// The row's index is the smallest index not yet placed; each rack
		// places at most one cell on it.
		index, found := 0, false
		for k, r := range racks {
			if next[k] < len(r.Cells) {
				if i := r.Cells[next[k]].Index; !found || i < index {
					index, found = i, true
				}
			}
		}
		if !found {
			return b
		}
		row := len(b.Rows)
		b.Rows = append(b.Rows, index)
		for k, r := range racks {
			if next[k] < len(r.Cells) && r.Cells[next[k]].Index == index {
				b.CellRow[k][next[k]] = row
				next[k]++
			}
		}
	}
}
