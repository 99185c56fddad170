package machine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckegen/ckegen/internal/clip"
	"github.com/ckegen/ckegen/internal/strictjson"
)

// graphQLResponse is the shape of a searchMachines response body.
type graphQLResponse struct {
	Data *struct {
		SearchMachines *[]Machine `json:"searchMachines"`
	} `json:"data"`
}

// Parse reads a machines file: a JSON array of machines, or a GraphQL
// response {"data":{"searchMachines":[...]}}. Every machine must have a
// serial and a known state; other problems are left to Sanitize.
//
// The file is read as encoding/json reads it (names matched ignoring case,
// unknown names skipped, the last of a name given twice), in one pass by
// DecodeList when the file has the plain shape sabakan and ckegen write,
// else by encoding/json itself (TestParseMatchesSlowPath). An error says
// where the problem is: the path of the value (machines[3].spec.rack), and
// the line and column in the file (1-based; the column counts characters,
// as in every error about a document: strictjson.Position).
func Parse(data []byte) ([]Machine, error) {
	return parse(data, true)
}

// parse is Parse; without fast it never takes DecodeList's path, as the
// reference of the tests.
func parse(data []byte, fast bool) ([]Machine, error) {
	// The value, without white space around it (Unicode's included, as
	// files have always been read).
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return nil, errors.New("machines: empty input")
	}
	f := file{data: data, lead: len(data) - len(bytes.TrimLeftFunc(data, unicode.IsSpace))}
	switch t[0] {
	case '[':
	case '{':
		f.envelope = true
	default:
		return nil, fmt.Errorf("machines: want a JSON array or a GraphQL response object%s", f.at(0))
	}
	var ms []Machine
	ok := false
	if fast {
		ms, ok = DecodeList(t, f.envelope)
	}
	if !ok {
		var err error
		if ms, err = f.decode(t); err != nil {
			return nil, err
		}
	}
	if err := Validate(ms); err != nil {
		return nil, f.invalid(t, err)
	}
	return ms, nil
}

// file is a machines file being read: data whole, the value starting at
// lead.
type file struct {
	data     []byte
	lead     int
	envelope bool
}

// decode reads t, the value of the file, with encoding/json.
func (f file) decode(t []byte) ([]Machine, error) {
	if !f.envelope {
		var ms []Machine
		if err := json.Unmarshal(t, &ms); err != nil {
			return nil, f.jsonError(t, err)
		}
		return ms, nil
	}
	var resp graphQLResponse
	if err := json.Unmarshal(t, &resp); err != nil {
		return nil, f.jsonError(t, err)
	}
	if resp.Data == nil || resp.Data.SearchMachines == nil {
		return nil, fmt.Errorf("machines: object without data.searchMachines%s", f.at(0))
	}
	return *resp.Data.SearchMachines, nil
}

// at is " (line L, column C)" for offset off in t, the file's value.
func (f file) at(off int) string {
	line, col := strictjson.Position(f.data, f.lead+off)
	return fmt.Sprintf(" (line %d, column %d)", line, col)
}

// jsonError words encoding/json's error about t, the file's value, with
// where the problem is and without Go's names for types.
func (f file) jsonError(t []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// A first value that decodes and is followed by more is trailing
		// data; the message says so.
		dec := json.NewDecoder(bytes.NewReader(t))
		var first json.RawMessage
		if dec.Decode(&first) == nil {
			end := int(dec.InputOffset())
			if dec.Decode(&first) != io.EOF {
				next := end + len(t[end:]) - len(bytes.TrimLeft(t[end:], " \t\r\n"))
				line, col := strictjson.Position(f.data, f.lead+next)
				return fmt.Errorf("machines: trailing data after the JSON value, from line %d, column %d: remove it", line, col)
			}
		}
		// The offending byte is the last one read; at the end of the
		// input, the end.
		off := int(se.Offset)
		if off > 0 && off <= len(t) && !strings.Contains(se.Error(), "end of JSON input") {
			off--
		}
		return fmt.Errorf("machines: %s%s", se.Error(), f.at(off))
	case errors.As(err, &te):
		path, start, ok := valueAt(t, int(te.Offset)-1)
		if !ok {
			return fmt.Errorf("machines: %s, got %s%s", want(te.Type), got(te.Value), f.at(int(te.Offset)))
		}
		return fmt.Errorf("%s: %s, got %s%s", f.pathName(path), want(te.Type), got(te.Value), f.at(start))
	}
	// A date that does not parse: time.Time's own error, without an
	// offset.
	if path, start, msg, ok := badDate(t, f.envelope); ok {
		return fmt.Errorf("%s: %s%s", f.pathName(path), msg, f.at(start))
	}
	// Not found where encoding/json found it: the date alone.
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("machines: %s", dateError([]byte(strconv.Quote(pe.Value)), err))
	}
	return errors.New("machines: a date must be a string (RFC 3339: 2006-01-02T15:04:05Z)")
}

// pathName names a value of the file: machines[3].spec.rack in an array,
// data.searchMachines[3].spec.rack in a GraphQL response.
func (f file) pathName(path []step) string {
	var b strings.Builder
	if !f.envelope || len(path) == 0 {
		b.WriteString("machines")
	}
	for i, s := range path {
		if s.key == nil {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if i > 0 || !f.envelope {
			b.WriteByte('.')
		}
		b.WriteString(clip.Value(*s.key))
	}
	return b.String()
}

// want says what a value of Go type t is in JSON.
func want(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "must be another kind of value"
	}
	switch t.Kind() {
	case reflect.String:
		return "must be a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "must be a 64-bit integer"
	case reflect.Float32, reflect.Float64:
		return "must be a number"
	case reflect.Bool:
		return "must be true or false"
	case reflect.Slice, reflect.Array:
		return "must be an array"
	case reflect.Struct, reflect.Map:
		return "must be an object"
	}
	return "must be another kind of value"
}

// got says what a JSON value is, from encoding/json's name for it.
func got(value string) string {
	switch value {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "object":
		return "an object"
	case "array":
		return "an array"
	}
	if n, ok := strings.CutPrefix(value, "number "); ok {
		return "the number " + clip.Value(n)
	}
	return clip.Value(value)
}

// The date fields of a machine, by where they are in it.
var dateFields = [][2]string{{"spec", "registerDate"}, {"spec", "retireDate"}, {"status", "timestamp"}}

// badDate finds the first date of the machines of t, in the order
// encoding/json decodes them (the order of the file), that time.Time does
// not read, and says why: encoding/json returns time.Time's error without
// saying where.
func badDate(t []byte, envelope bool) (path []step, start int, msg string, ok bool) {
	walk(t, func(p []step, s, e int) bool {
		m, in := inList(p, envelope)
		if !in || len(m) != 3 || m[0].key != nil || m[1].key == nil || m[2].key == nil {
			return false
		}
		for _, f := range dateFields {
			if !strings.EqualFold(*m[1].key, f[0]) || !strings.EqualFold(*m[2].key, f[1]) {
				continue
			}
			raw := t[s:e]
			if string(raw) == "null" {
				return false
			}
			var tm time.Time
			if err := tm.UnmarshalJSON(raw); err != nil {
				path, start, msg, ok = append([]step(nil), p...), s, dateError(raw, err), true
				return true
			}
		}
		return false
	})
	return path, start, msg, ok
}

// inList returns path from the list of machines on (from the array, or
// from data.searchMachines in a GraphQL response, names matched ignoring
// case as encoding/json matches them), or false for a path outside it.
func inList(path []step, envelope bool) ([]step, bool) {
	if !envelope {
		return path, true
	}
	if len(path) < 2 || path[0].key == nil || !strings.EqualFold(*path[0].key, "data") ||
		path[1].key == nil || !strings.EqualFold(*path[1].key, "searchMachines") {
		return nil, false
	}
	return path[2:], true
}

// dateError words time.Time's refusal of raw.
func dateError(raw []byte, err error) string {
	if len(raw) == 0 || raw[0] != '"' {
		return "must be a date in a string (RFC 3339: 2006-01-02T15:04:05Z), got " + kindOf(raw)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	msg := fmt.Sprintf("%q is not an RFC 3339 date (2006-01-02T15:04:05Z)", clip.Value(s))
	var pe *time.ParseError
	if errors.As(err, &pe) && pe.Message != "" {
		msg += ": " + strings.TrimPrefix(pe.Message, ": ")
	}
	return msg
}

// kindOf names the kind of the JSON value raw.
func kindOf(raw []byte) string {
	switch {
	case len(raw) == 0:
		return "nothing"
	case raw[0] == '{':
		return "an object"
	case raw[0] == '[':
		return "an array"
	case raw[0] == 't' || raw[0] == 'f':
		return "true or false"
	}
	return "a number"
}

// invalid gives Validate's error about the machines of t where the file
// has the field it is about or, without the field, the machine.
func (f file) invalid(t []byte, err error) error {
	var ie *invalidError
	if !errors.As(err, &ie) {
		return err
	}
	fields := strings.Split(ie.field, ".")
	machine, field := -1, -1
	walk(t, func(p []step, s, _ int) bool {
		m, in := inList(p, f.envelope)
		if !in || len(m) == 0 || m[0].key != nil || m[0].index != ie.index {
			return false
		}
		if len(m) == 1 {
			machine = s
			return true
		}
		if len(m) != len(fields)+1 {
			return false
		}
		for i, name := range fields {
			if m[i+1].key == nil || !strings.EqualFold(*m[i+1].key, name) {
				return false
			}
		}
		// The last of a name given twice, as encoding/json keeps the
		// last.
		field = s
		return false
	})
	switch {
	case field >= 0:
		return fmt.Errorf("%w%s", err, f.at(field))
	case machine >= 0:
		return fmt.Errorf("%w%s", err, f.at(machine))
	}
	return err
}

// invalidError is Validate's error about the field of a machine.
type invalidError struct {
	index int
	field string
	msg   string
}

func (e *invalidError) Error() string { return e.msg }

// step is one step of the path to a value: an object's member (key) or
// an array's element.
type step struct {
	key   *string
	index int
}

// valueAt returns the path and start of the innermost value of t, valid
// JSON, that holds the byte at off.
func valueAt(t []byte, off int) (path []step, start int, ok bool) {
	walk(t, func(p []step, s, e int) bool {
		if s <= off && off < e {
			path, start, ok = append([]step(nil), p...), s, true
			return true
		}
		return false
	})
	return path, start, ok
}

// walk calls visit for each value of t, valid JSON, with its path, start
// and end, inner values before the value holding them (so in the order
// of the file for values that hold no other), until visit reports true.
// It reads t with jsontext's Decoder, as encoding/json reads it (a name
// twice, invalid UTF-8); on what is not valid JSON after all, the walk
// ends where it is.
func walk(t []byte, visit func(path []step, start, end int) bool) {
	w := walker{
		t:     t,
		dec:   jsontext.NewDecoder(bytes.NewBuffer(t), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)),
		visit: visit,
	}
	w.value()
}

type walker struct {
	t     []byte
	dec   *jsontext.Decoder
	path  []step
	visit func([]step, int, int) bool
}

// value walks the next value and reports whether the walk ends.
func (w *walker) value() (stop bool) {
	start := valueStart(w.t, int(w.dec.InputOffset()))
	switch w.dec.PeekKind() {
	case '{':
		if _, err := w.dec.ReadToken(); err != nil {
			return true
		}
		for w.dec.PeekKind() == '"' {
			name, err := w.dec.ReadToken()
			if err != nil {
				return true
			}
			key := name.String()
			w.path = append(w.path, step{key: &key})
			stop = w.value()
			w.path = w.path[:len(w.path)-1]
			if stop {
				return true
			}
		}
	case '[':
		if _, err := w.dec.ReadToken(); err != nil {
			return true
		}
		for i := 0; w.dec.PeekKind() != ']'; i++ {
			w.path = append(w.path, step{index: i})
			stop = w.value()
			w.path = w.path[:len(w.path)-1]
			if stop {
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

// valueStart is the offset of the value that comes after off: past white
// space and the comma or colon before it.
func valueStart(t []byte, off int) int {
	for off < len(t) {
		switch t[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}
