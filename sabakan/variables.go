package sabakan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/machine"
)

// Variables are the user's query variables for ckeSearch.
//
// A variable the user left out is not sent, so the query's default applies
// (notHaving's default skips boot servers and retired machines). A variable
// given as null means no condition; it is sent as an empty MachineParams
// object, which matches every machine just as null does.
type Variables struct {
	Having    *MachineParams
	NotHaving *MachineParams
}

// ParseVariables reads the user's variables JSON:
// {"having": MachineParams|null, "notHaving": MachineParams|null}, both keys
// optional. Unknown keys, unknown states and wrong types are errors that
// name the field.
func ParseVariables(data []byte) (Variables, error) {
	var v Variables
	var raw map[string]json.RawMessage
	if err := strictjson.Unmarshal(data, &raw); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) && se.Kind == strictjson.Duplicate {
			return v, fmt.Errorf("query variables: %w", err)
		}
		return v, fmt.Errorf("query variables: want a JSON object {\"having\": ..., \"notHaving\": ...}: %w", err)
	}
	if raw == nil {
		return v, fmt.Errorf("query variables: want a JSON object {\"having\": ..., \"notHaving\": ...}, got null")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		val := raw[key]
		var dst **MachineParams
		switch key {
		case "having":
			dst = &v.Having
		case "notHaving":
			dst = &v.NotHaving
		default:
			return Variables{}, fmt.Errorf("query variables: unknown key %q (want having, notHaving)", key)
		}
		p, err := parseParams(val)
		if err != nil {
			return Variables{}, fmt.Errorf("query variables: %s%w", key, err)
		}
		*dst = p
	}
	return v, nil
}

// paramsJSON is MachineParams as the user writes it.
type paramsJSON struct {
	Labels              []*labelJSON `json:"labels"`
	Racks               []int        `json:"racks"`
	Roles               []string     `json:"roles"`
	States              []string     `json:"states"`
	MinDaysBeforeRetire *int         `json:"minDaysBeforeRetire"`
}

type labelJSON struct {
	Name  *string `json:"name"`
	Value *string `json:"value"`
}

func parseParams(raw json.RawMessage) (*MachineParams, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return &MachineParams{}, nil
	}
	var pj paramsJSON
	if err := strictjson.Unmarshal(raw, &pj); err != nil {
		return nil, paramsError(err)
	}
	p := &MachineParams{
		Racks:               pj.Racks,
		Roles:               pj.Roles,
		MinDaysBeforeRetire: pj.MinDaysBeforeRetire,
	}
	for i, l := range pj.Labels {
		if l == nil || l.Name == nil || l.Value == nil {
			return nil, fmt.Errorf(".labels[%d]: want {\"name\": ..., \"value\": ...} with both set", i)
		}
		p.Labels = append(p.Labels, &LabelInput{Name: *l.Name, Value: *l.Value})
	}
	for i, s := range pj.States {
		st := machine.State(s)
		if !st.Valid() {
			return nil, fmt.Errorf(".states[%d]: unknown state %q", i, s)
		}
		p.States = append(p.States, st)
	}
	return p, nil
}

// paramsError words a decoding error of a MachineParams value after the
// variable's name (having, notHaving): .racks: cannot use a string at [0]
// (want int).
func paramsError(err error) error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return fmt.Errorf(": %w", err)
	}
	if se.Kind != strictjson.Type {
		return fmt.Errorf("%s: %s", dotted(se.Path), se.Msg)
	}
	if len(se.Path) == 0 {
		return fmt.Errorf(": cannot use a %s here (want a MachineParams object or null)", se.Value)
	}
	// The field, then the element in it.
	field, where := se.Path, "here"
	if last := len(field) - 1; last > 0 && field[last].IsIndex {
		field, where = field[:last], "at "+field[last:].String()
	}
	return fmt.Errorf("%s: cannot use a %s %s (want %v)", dotted(field), se.Value, where, se.GoType)
}

// dotted writes a path inside a variable: "" for the variable itself,
// .labels[0].name below it.
func dotted(p strictjson.Path) string {
	s := p.String()
	if s == "" || strings.HasPrefix(s, "[") {
		return s
	}
	return "." + s
}
