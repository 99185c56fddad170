package strictjson

import (
	"fmt"
	"strings"
	"testing"
)

// TestWalk: every value, inner values first, with its path and where it
// is; a name given twice is walked twice; the walk stops when asked and
// where the input stops being JSON.
func TestWalk(t *testing.T) {
	data := []byte(" {\"a\": [1, {\"b\": \"x\"}],\n \"a\": null, \"c d\": {}} ")
	var got []string
	Walk(data, func(p Path, start, end int) bool {
		got = append(got, fmt.Sprintf("%s=%s", p, data[start:end]))
		return false
	})
	want := []string{
		`a[0]=1`, `a[1].b="x"`, `a[1]={"b": "x"}`, `a=[1, {"b": "x"}]`,
		`a=null`, `["c d"]={}`,
		"=" + strings.TrimSpace(string(data)),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Walk:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	got = nil
	Walk(data, func(p Path, start, end int) bool {
		got = append(got, p.String())
		return p.String() == "a[1].b"
	})
	if strings.Join(got, " ") != "a[0] a[1].b" {
		t.Errorf("stopped walk: %q", got)
	}

	got = nil
	Walk([]byte(`[1, 2 x]`), func(p Path, start, end int) bool {
		got = append(got, p.String())
		return false
	})
	if strings.Join(got, " ") != "[0] [1]" {
		t.Errorf("walk of what is not JSON: %q", got)
	}
}
