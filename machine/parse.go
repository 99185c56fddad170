package machine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

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
			return fmt.Errorf("machines: %s%s", want(te.Type), f.at(int(te.Offset)))
		}
		return fmt.Errorf("%s: %s, got %s%s", f.pathName(path), want(te.Type), strictjson.What(t[start:]), f.at(start))
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
func (f file) pathName(path strictjson.Path) string {
	if !f.envelope || len(path) == 0 {
		return "machines" + path.String()
	}
	return path.String()
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

// The date fields of a machine, by where they are in it.
var dateFields = [][2]string{{"spec", "registerDate"}, {"spec", "retireDate"}, {"status", "timestamp"}}

// badDate finds the first date of the machines of t, in the order
// encoding/json decodes them (the order of the file), that time.Time does
// not read, and says why: encoding/json returns time.Time's error without
// saying where.
func badDate(t []byte, envelope bool) (path strictjson.Path, start int, msg string, ok bool) {
	strictjson.Walk(t, func(p strictjson.Path, s, e int) bool {
		m, in := inList(p, envelope)
		if !in || len(m) != 3 || !m[0].IsIndex || m[1].IsIndex || m[2].IsIndex {
			return false
		}
		for _, f := range dateFields {
			if !strings.EqualFold(m[1].Key, f[0]) || !strings.EqualFold(m[2].Key, f[1]) {
				continue
			}
			raw := t[s:e]
			if string(raw) == "null" {
				return false
			}
			var tm time.Time
			if err := tm.UnmarshalJSON(raw); err != nil {
				path, start, msg, ok = slices.Clone(p), s, dateError(raw, err), true
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
func inList(path strictjson.Path, envelope bool) (strictjson.Path, bool) {
	if !envelope {
		return path, true
	}
	if len(path) < 2 || path[0].IsIndex || !strings.EqualFold(path[0].Key, "data") ||
		path[1].IsIndex || !strings.EqualFold(path[1].Key, "searchMachines") {
		return nil, false
	}
	return path[2:], true
}

// dateError words time.Time's refusal of raw.
func dateError(raw []byte, err error) string {
	if len(raw) == 0 || raw[0] != '"' {
		return "must be a date in a string (RFC 3339: 2006-01-02T15:04:05Z), got " + strictjson.What(raw)
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

// invalid gives Validate's error about the machines of t where the file
// has the field it is about or, without the field, the machine.
func (f file) invalid(t []byte, err error) error {
	var ie *invalidError
	if !errors.As(err, &ie) {
		return err
	}
	fields := strings.Split(ie.field, ".")
	machine, field := -1, -1
	strictjson.Walk(t, func(p strictjson.Path, s, _ int) bool {
		m, in := inList(p, f.envelope)
		if !in || len(m) == 0 || !m[0].IsIndex || m[0].Index != ie.index {
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
			if m[i+1].IsIndex || !strings.EqualFold(m[i+1].Key, name) {
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

// valueAt returns the path and start of the innermost value of t, valid
// JSON, that holds the byte at off.
func valueAt(t []byte, off int) (path strictjson.Path, start int, ok bool) {
	strictjson.Walk(t, func(p strictjson.Path, s, e int) bool {
		if s <= off && off < e {
			path, start, ok = slices.Clone(p), s, true
			return true
		}
		return false
	})
	return path, start, ok
}
