package etcdclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/cybozu-go/etcdutil"
	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/storage"
)

// Config is where etcd is and how to log in: CKE's configuration file as
// etcdutil reads it, with the flags over it.
type Config struct {
	// The file's settings with the flags over them. Timeout is the
	// file's dial timeout, "" when it sets none: Connect then uses
	// etcdutil's default (2s), or the limit of Within.
	etcdutil.Config
	// File is the configuration file read, "" when none was.
	File string
	// Configured is false when neither a file nor --etcd-endpoints names
	// an etcd. Endpoints are then etcdutil's default,
	// http://127.0.0.1:2379: ckegenctl uses it, cke runs an embedded etcd.
	Configured bool

	// data is the file, for the positions of errors.
	data []byte
}

// Load reads the configuration: the file of --config when it is given,
// else the default file when it exists; then --etcd-endpoints and
// --etcd-prefix over the file's values. Every error names the flag or
// the file, with the line and column of what is wrong.
func (f *Flags) Load() (*Config, error) {
	cfg := &Config{Config: *etcdutil.NewConfig(storage.DefaultPrefix)}
	cfg.Timeout = ""
	if path := f.config.value; path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			cfg.File, cfg.Configured = path, true
			if err := cfg.parse(data); err != nil {
				return nil, err
			}
		case errors.Is(err, fs.ErrNotExist) && !f.config.set:
			// The default file is not there: nothing to read.
		default:
			return nil, fmt.Errorf("--config: %w", err)
		}
	}
	if f.endpoints.set {
		eps, err := splitEndpoints(f.endpoints.value)
		if err != nil {
			// A flag value refused: a usage error.
			return nil, usage.Errorf("--etcd-endpoints: %w", err)
		}
		cfg.Endpoints, cfg.Configured = eps, true
	}
	if f.prefix.set {
		cfg.Prefix = f.prefix.value
	}
	return cfg, nil
}

// splitEndpoints is the list of a comma-separated flag value; an empty
// one is refused.
func splitEndpoints(s string) ([]string, error) {
	var eps []string
	for _, ep := range strings.Split(s, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			return nil, fmt.Errorf("an empty endpoint in %q: want comma-separated URLs such as http://127.0.0.1:2379", s)
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// keys are the file's keys, as etcdutil names them.
var keys = strictjson.FieldNames(reflect.TypeFor[etcdutil.Config]())

// DecodeFile decodes data, CKE's etcd configuration file, into cfg over
// its values as etcdutil reads it: YAML 1.1 read by sigs.k8s.io/yaml, a
// scalar read as a string where a string is wanted (password: 1234). A
// key given twice is refused. With strict, so is a key that is not one of
// etcdutil's (matched exactly); without, it is ignored, as CKE's server
// ignores it. Every error is a *strictjson.Error at its line and column
// in data, worded in YAML's and JSON's terms.
func DecodeFile(data []byte, cfg *etcdutil.Config, strict bool) error {
	// What YAML does not read, and keys given twice.
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	var doc any
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return yamlpos.Errors(err, data)
	}
	if doc == nil {
		return nil // empty: etcdutil's defaults
	}
	if _, ok := doc.(map[any]any); !ok {
		js, _ := yaml.YAMLToJSON(data)
		return yamlpos.Place(strictjson.WrongKind(nil, "an object of "+strings.Join(keys, ", "), js), data)
	}
	if strict {
		if root := topLevel(data); root != nil {
			for i := 0; i+1 < len(root.Content); i += 2 {
				if k := root.Content[i]; !slices.Contains(keys, k.Value) {
					e := strictjson.UnknownField(nil, k.Value, keys)
					e.Line, e.Column = k.Line, k.Column
					return e
				}
			}
		}
	}
	err := yaml.Unmarshal(data, cfg)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return yamlpos.Place(typeError(data, te), data)
	case strings.Contains(err.Error(), "map key"):
		// A key with no JSON form (null, a date).
		if k := yamlpos.BadKey(data); k != nil {
			return k
		}
	}
	return yamlpos.Errors(err, data)
}

// typeError is the error of a value of data (YAML) of the wrong kind,
// which encoding/json reported as te: at the value, or at the first item
// of a list that is not a string.
func typeError(data []byte, te *json.UnmarshalTypeError) error {
	key, _, _ := strings.Cut(te.Field, ".")
	path := strictjson.Path(nil).Key(key)
	var raw map[string]json.RawMessage
	js, _ := yaml.YAMLToJSON(data)
	_ = json.Unmarshal(js, &raw)
	t, ok := fieldType(key)
	if !ok {
		return strictjson.WrongKind(path, strictjson.WantOf(te.Type), raw[key])
	}
	var items []json.RawMessage
	if t.Kind() == reflect.Slice && json.Unmarshal(raw[key], &items) == nil {
		for i, it := range items {
			if len(it) > 0 && it[0] != '"' {
				return strictjson.WrongKind(path.Index(i), strictjson.WantOf(t.Elem()), it)
			}
		}
	}
	return strictjson.WrongKind(path, strictjson.WantOf(t), raw[key])
}

// fieldType is the type of the field of etcdutil.Config that key sets.
func fieldType(key string) (reflect.Type, bool) {
	t := reflect.TypeFor[etcdutil.Config]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == key {
			return t.Field(i).Type, true
		}
	}
	return nil, false
}

// parse decodes the file into c and checks it.
func (c *Config) parse(data []byte) error {
	c.data = data
	if err := DecodeFile(data, &c.Config, true); err != nil {
		return c.wrap(err)
	}
	return c.check()
}

// topLevel is the file's top-level mapping, nil when it is not one or
// does not parse.
func topLevel(data []byte) *yamlv3.Node {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 ||
		doc.Content[0].Kind != yamlv3.MappingNode {
		return nil
	}
	return doc.Content[0]
}

// errorf is an error about key of the file, at the key's value in the
// file when the file sets it: "--config FILE: line N, column C: ...".
func (c *Config) errorf(key, format string, args ...any) error {
	e := strictjson.Invalidf(nil, format, args...)
	if root := topLevel(c.data); root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				v := root.Content[i+1]
				e.Line, e.Column = v.Line, v.Column
				break
			}
		}
	}
	return c.wrap(e)
}

// wrap names the file in err, an error about it.
func (c *Config) wrap(err error) error {
	if c.File == "" {
		return err
	}
	return fmt.Errorf("--config %s: %w", c.File, err)
}

// check refuses what etcdutil would ignore or fail on later with a
// vaguer message, and reads the TLS files it names.
func (c *Config) check() error {
	if len(c.Endpoints) == 0 {
		return c.errorf("endpoints", "endpoints: empty; give at least one URL such as https://10.0.0.1:2379")
	}
	if slices.Contains(c.Endpoints, "") {
		return c.errorf("endpoints", "endpoints: an empty endpoint in %q", c.Endpoints)
	}
	if _, err := c.dialTimeout(); err != nil {
		return err
	}
	_, err := c.TLS()
	return err
}

// dialTimeout is the file's timeout, 0 when it sets none.
func (c *Config) dialTimeout() (time.Duration, error) {
	if c.Timeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.Timeout)
	if err != nil || d <= 0 {
		return 0, c.errorf("timeout", "timeout: want a positive duration such as 2s, got %q", c.Timeout)
	}
	return d, nil
}
