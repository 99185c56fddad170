package suggest

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagError parses real command lines with pflag and checks the
// suggestion added to its error.
func TestFlagError(t *testing.T) {
	newSet := func() *pflag.FlagSet {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("etcd-endpoints", "", "")
		fs.String("listen", "", "")
		fs.String("machines", "", "")
		fs.StringP("output", "o", "", "")
		fs.Bool("faults", false, "")
		fs.String("secret-old", "", "")
		_ = fs.MarkHidden("secret-old")
		fs.String("old-spelling", "", "")
		_ = fs.MarkHidden("old-spelling")
		_ = fs.SetAnnotation("old-spelling", Suggested, []string{"true"})
		fs.Duration("sabakan-timeout", 0, "")
		fs.Duration("kubernetes-timeout", 0, "")
		return fs
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-endpoint", "x"}, "unknown flag: --etcd-endpoint; did you mean --etcd-endpoints?"},
		{[]string{"--etcd-endpoint=x"}, "unknown flag: --etcd-endpoint; did you mean --etcd-endpoints?"},
		{[]string{"--machine", "m.json"}, "unknown flag: --machine; did you mean --machines?"},
		{[]string{"--etcd", "x"}, "unknown flag: --etcd; did you mean --etcd-endpoints?"},
		{[]string{"-listen", "127.0.0.1:0"}, `unknown shorthand flag: 'l' in -listen; flags take two dashes: did you mean --listen?`},
		{[]string{"-machines=m.json"}, `unknown shorthand flag: 'm' in -machines=m.json; flags take two dashes: did you mean --machines?`},
		{[]string{"-fault"}, `unknown shorthand flag: 'f' in -fault; flags take two dashes: did you mean --faults?`},
		{[]string{"--secret-ol"}, "unknown flag: --secret-ol"},                                   // hidden: never suggested
		{[]string{"--old-speling"}, "unknown flag: --old-speling; did you mean --old-spelling?"}, // hidden, but Suggested
		// Two edits, one a swap of neighbours.
		{[]string{"--lsitn", "x"}, "unknown flag: --lsitn; did you mean --listen?"},
		{[]string{"--machiens=m.json"}, "unknown flag: --machiens; did you mean --machines?"},
		// Three edits: no suggestion.
		{[]string{"--lstnnn", "x"}, "unknown flag: --lstnnn"},
		// The last words of a flag, two edits away.
		{[]string{"--endpiont", "x"}, "unknown flag: --endpiont; did you mean --etcd-endpoints?"},
		{[]string{"--timeotu", "1s"}, "unknown flag: --timeotu; did you mean --kubernetes-timeout or --sabakan-timeout?"},
		{[]string{"-endpionts", "x"}, `unknown shorthand flag: 'e' in -endpionts; flags take two dashes: did you mean --etcd-endpoints?`},
		{[]string{"--zzzzzz"}, "unknown flag: --zzzzzz"},
		{[]string{"-z"}, `unknown shorthand flag: 'z' in -z`},
		{[]string{"--output"}, "flag needs an argument: --output"},
	} {
		fs := newSet()
		err := FlagError(fs, fs.Parse(c.args))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
		var ne *pflag.NotExistError
		if c.want != "flag needs an argument: --output" && !errors.As(err, &ne) {
			t.Errorf("%q: the suggestion hides pflag's error", c.args)
		}
	}
	if err := FlagError(newSet(), nil); err != nil {
		t.Errorf("nil error: %v", err)
	}
}

// TestOneDash: a long flag written with one dash is refused before pflag
// reads it as shorthands (-http would be -h, help, exit 0).
func TestOneDash(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("http", "", "")
	fs.StringP("output", "o", "", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-http", "x"}, "-http: flags take two dashes: did you mean --http?"},
		{[]string{"--output", "json", "-http=x"}, "-http=x: flags take two dashes: did you mean --http?"},
		{[]string{"-output"}, "-output: flags take two dashes: did you mean --output?"},
		{[]string{"-o", "json", "--http", "x"}, ""},
		{[]string{"-ojson"}, ""}, // a shorthand with its value
		{[]string{"--", "-http"}, ""},
	} {
		err := OneDash(fs, c.args)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}
