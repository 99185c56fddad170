package strictjson

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// Walk calls visit for each value of data, a JSON document, with its path
// and where it starts and ends in data, the values a value holds before
// it (so the values that hold none in the order of data), until visit
// reports true. The path is valid during the call only. Data is read as
// encoding/json reads it (a name given twice, invalid UTF-8); where data
// stops being JSON, the walk ends.
func Walk(data []byte, visit func(p Path, start, end int) (stop bool)) {
	w := walker{
		data:  data,
		dec:   jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), utf8AsV1),
		visit: visit,
	}
	w.value()
}

type walker struct {
	data  []byte
	dec   *jsontext.Decoder
	path  Path
	visit func(Path, int, int) bool
}

// value walks the next value and reports whether the walk ends.
func (w *walker) value() (stop bool) {
	start := skipSpace(w.data, int(w.dec.InputOffset()))
	switch w.dec.PeekKind() {
	case '{':
		if _, err := w.dec.ReadToken(); err != nil {
			return true
		}
		for w.dec.PeekKind() == '"' {
			name, err := w.dec.ReadToken()
			if err != nil || w.inner(Step{Key: name.String()}) {
				return true
			}
		}
	case '[':
		if _, err := w.dec.ReadToken(); err != nil {
			return true
		}
		for i := 0; w.dec.PeekKind() != ']'; i++ {
			if w.inner(Step{Index: i, IsIndex: true}) {
				return true
			}
		}
	default:
		if w.dec.SkipValue() != nil {
			return true
		}
		return w.visit(w.path, start, int(w.dec.InputOffset()))
	}
	// The object's '}' or the array's ']'.
	if _, err := w.dec.ReadToken(); err != nil {
		return true
	}
	return w.visit(w.path, start, int(w.dec.InputOffset()))
}

// inner walks the value at step s of the value being walked.
func (w *walker) inner(s Step) (stop bool) {
	w.path = append(w.path, s)
	stop = w.value()
	w.path = w.path[:len(w.path)-1]
	return stop
}
