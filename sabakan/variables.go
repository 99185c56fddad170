package sabakan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

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
// name the field, its line and its column.
func ParseVariables(data []byte) (Variables, error) {
	v, err := parseVariables(data)
	if err != nil {
		return Variables{}, fmt.Errorf("query variables: %w", strictjson.Place(err, data))
	}
	return v, nil
}

// variableNames are the keys of the variables object.
var variableNames = []string{"having", "notHaving"}

func parseVariables(data []byte) (Variables, error) {
	var v Variables
	var raw map[string]json.RawMessage
	if err := strictjson.Unmarshal(data, &raw, strictjson.Document(`{"having": ..., "notHaving": ...}`)); err != nil {
		return v, err
	}
	if raw == nil {
		return v, strictjson.WrongKind(nil, `an object ({"having": ..., "notHaving": ...})`, data)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		var dst **MachineParams
		switch key {
		case "having":
			dst = &v.Having
		case "notHaving":
			dst = &v.NotHaving
		default:
			return v, strictjson.UnknownField(nil, key, variableNames)
		}
		p, err := parseParams(strictjson.Path(nil).Key(key), raw[key])
		if err != nil {
			return v, err
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

// parseParams reads the MachineParams at path at of the variables.
func parseParams(at strictjson.Path, raw json.RawMessage) (*MachineParams, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return &MachineParams{}, nil
	}
	var pj paramsJSON
	if err := strictjson.Unmarshal(raw, &pj, strictjson.Document("MachineParams, or null")); err != nil {
		return nil, strictjson.Within(err, at)
	}
	p := &MachineParams{
		Racks:               pj.Racks,
		Roles:               pj.Roles,
		MinDaysBeforeRetire: pj.MinDaysBeforeRetire,
	}
	for i, l := range pj.Labels {
		if l == nil || l.Name == nil || l.Value == nil {
			return nil, strictjson.Invalidf(at.Key("labels").Index(i), `want {"name": ..., "value": ...} with both set`)
		}
		p.Labels = append(p.Labels, &LabelInput{Name: *l.Name, Value: *l.Value})
	}
	for i, s := range pj.States {
		st := machine.State(s)
		if !st.Valid() {
			return nil, strictjson.Invalidf(at.Key("states").Index(i), "unknown state %q", s)
		}
		p.States = append(p.States, st)
	}
	return p, nil
}
