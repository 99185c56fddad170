package etcdclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cybozu-go/etcdutil"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/internal/suggest"
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

	// lines are the lines of the file's keys, for errors.
	lines map[string]int
}

// Load reads the configuration: the file of --config when it is given,
// else the default file when it exists; then --etcd-endpoints and
// --etcd-prefix over the file's values. Every error names the flag or
// the file and the key, with its line.
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
			return nil, fmt.Errorf("--etcd-endpoints: %w", err)
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
var keys = func() []string {
	var ks []string
	t := reflect.TypeFor[etcdutil.Config]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		ks = append(ks, name)
	}
	return ks
}()

// parse decodes the file into c and checks it.
func (c *Config) parse(data []byte) error {
	c.lines = map[string]int{}
	root, rootLine := topLevel(data)
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			k := root.Content[i]
			if _, seen := c.lines[k.Value]; !seen {
				c.lines[k.Value] = k.Line
			}
		}
	}
	err := yaml.UnmarshalStrict(data, &c.Config)
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "error converting YAML to JSON"):
		// YAML that does not parse, or a key given twice: the YAML
		// library's message has the line.
		return c.errorf("", "%s", yamlMessage(err))
	case root != nil:
		// Keys are matched exactly (the JSON decoding behind the YAML
		// library would take Prefix or PREFIX for prefix).
		for i := 0; i+1 < len(root.Content); i += 2 {
			k := root.Content[i]
			if !slices.Contains(keys, k.Value) {
				return c.errorAt(k.Line, "unknown field %q%s", k.Value, didYouMean(k.Value))
			}
		}
	}
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return c.check()
	case errors.As(err, &te) && te.Field != "":
		key, _, _ := strings.Cut(te.Field, ".")
		return c.errorf(key, "%s: want %s, got %s", key, describeType(te.Type), describeValue(te.Value))
	case te != nil:
		return c.errorAt(rootLine, "want a mapping of %s, got %s", strings.Join(keys, ", "), describeValue(te.Value))
	}
	// The keys could not be read here: the YAML library's unknown field.
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return c.errorf(m[1], "unknown field %q%s", m[1], didYouMean(m[1]))
	}
	return c.errorf("", "%s", yamlMessage(err))
}

// topLevel is the file's top-level mapping, nil when it is not one or
// does not parse (the YAML library then says why), and the line of the
// document's value (1 when there is none).
func topLevel(data []byte) (*yamlv3.Node, int) {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 {
		return nil, 1
	}
	if v := doc.Content[0]; v.Kind != yamlv3.MappingNode {
		return nil, v.Line
	}
	return doc.Content[0], doc.Content[0].Line
}

var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// yamlMessage is the YAML library's error on one line, without the
// layers' prefixes: "line 3: key "prefix" already set in map".
func yamlMessage(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: ", "yaml: ", "unmarshal errors: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

func didYouMean(key string) string {
	if s, ok := suggest.Closest(key, keys); ok {
		return "; did you mean " + s + "?"
	}
	return "; the keys are " + strings.Join(keys, ", ")
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(describeType(t.Elem()), "a ") + "s"
	case reflect.String:
		return "a string"
	}
	return t.String()
}

func describeValue(v string) string {
	switch kind, _, _ := strings.Cut(v, " "); kind {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	}
	return v
}

// errorf is an error about key of the file: "--config FILE: line N:
// ...", without the line when key is "" or not in the file.
func (c *Config) errorf(key, format string, args ...any) error {
	return c.errorAt(c.lines[key], format, args...)
}

func (c *Config) errorAt(line int, format string, args ...any) error {
	at := ""
	if line > 0 {
		at = fmt.Sprintf("line %d: ", line)
	}
	if c.File == "" {
		return fmt.Errorf(at+format, args...)
	}
	return fmt.Errorf("--config %s: "+at+format, append([]any{c.File}, args...)...)
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
