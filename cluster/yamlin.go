package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
)

// yamlToJSON converts one YAML document to JSON as CKE reads cluster.yml
// (sigs.k8s.io/yaml over go.yaml.in/yaml/v2: YAML 1.1 scalars, so an
// unquoted yes is true, and map keys turned into strings). It refuses a key
// given twice in a mapping and a second document, which the conversion
// would drop. Two keys that become the same string (1 and "1") are both
// written, for the caller's JSON check to refuse.
func yamlToJSON(data []byte) ([]byte, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	var doc any
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return []byte("null"), nil // reported as an empty document
		}
		return nil, yamlpos.Errors(err, data)
	}
	var next any
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlpos.Errors(err, data)
		}
		return nil, yamlpos.SecondDocument(data, "more than one document: a cluster.yml holds exactly one")
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, doc, nil); err != nil {
		if errors.Is(err, errNoJSONKey) {
			if k := yamlpos.BadKey(data); k != nil {
				return nil, k // at the key itself
			}
		}
		return nil, yamlpos.Place(err, data)
	}
	return buf.Bytes(), nil
}

// writeJSON writes a value decoded by yaml.v2 as JSON, object keys sorted.
func writeJSON(buf *bytes.Buffer, v any, path strictjson.Path) error {
	switch v := v.(type) {
	case map[any]any:
		// Two keys may become the same string (1 and "1"): both are
		// written, and the check of the JSON refuses them.
		type member struct {
			key string
			val any
		}
		members := make([]member, 0, len(v))
		for k, val := range v {
			ks, err := keyString(k)
			if err != nil {
				return &strictjson.Error{Kind: strictjson.Invalid, Path: path, Msg: err.Error(), Err: errNoJSONKey}
			}
			members = append(members, member{ks, val})
		}
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
		buf.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, m.key)
			buf.WriteByte(':')
			if err := writeJSON(buf, m.val, path.Key(m.key)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, e, path.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case string:
		writeString(buf, v)
	case int:
		buf.WriteString(strconv.Itoa(v))
	case int64:
		buf.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		buf.WriteString(strconv.FormatUint(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strictjson.Invalidf(path, "%v has no JSON form", v)
		}
		b, _ := json.Marshal(v)
		buf.Write(b)
	default: // a !!timestamp-tagged time.Time
		b, err := json.Marshal(v)
		if err != nil {
			return strictjson.Invalidf(path, "%v", err)
		}
		buf.Write(b)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}

// errNoJSONKey marks the error of a key that has no JSON form.
var errNoJSONKey = errors.New("a key with no JSON form")

// keyString turns a YAML map key into a JSON key as sigs.k8s.io/yaml does.
func keyString(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case uint64:
		return strconv.FormatUint(k, 10), nil
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(k), nil
	case nil:
		return "", errors.New("a null key has no JSON form; quote it")
	}
	return "", errors.New("this key has no JSON form; quote it")
}
