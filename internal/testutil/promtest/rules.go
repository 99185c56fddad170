package promtest

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Rule is an alerting rule of a Prometheus rule file: its name and
// expression.
type Rule struct {
	Alert string `json:"alert"`
	Expr  string `json:"expr"`
}

// AlertRules reads the alerting rules of a Prometheus rule file (the
// recording rules left out), in the file's order.
func AlertRules(file string) ([]Rule, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var f struct {
		Groups []struct {
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var rules []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				rules = append(rules, r)
			}
		}
	}
	return rules, nil
}

// LabelValues returns the values an expression's selectors match label
// to with an equality matcher (label="value"), in order; regular
// expressions and negations are not values.
func LabelValues(expr, label string) []string {
	var values []string
	for _, m := range regexp.MustCompile(`(?:^|[{,\s])`+regexp.QuoteMeta(label)+`\s*=\s*"([^"\\]*)"`).FindAllStringSubmatch(expr, -1) {
		values = append(values, m[1])
	}
	return values
}

// promqlKeywords are the words of PromQL that are neither metric names nor
// functions.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// promqlLabelLists are the words followed by a list of label names.
var promqlLabelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// MetricNames returns the metric names a PromQL expression selects, in
// order of first appearance: the identifiers that are not a function or
// aggregation (followed by "("), a keyword, or a label (in {...}, or in
// the list after by, without, on, ignoring, group_left, group_right).
// Strings, comments, ranges and numbers are skipped. A selector by
// {__name__=...} is refused: its name could not be checked.
func MetricNames(expr string) ([]string, error) {
	var names []string
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	// skipString returns the index after the string that starts at i.
	skipString := func(i int) (int, error) {
		q := expr[i]
		for j := i + 1; j < len(expr); j++ {
			switch {
			case expr[j] == '\\' && q != '`':
				j++
			case expr[j] == q:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("column %d: string not closed", i+1)
	}
	// skipTo returns the index after the first end outside strings.
	skipTo := func(i int, end byte) (int, string, error) {
		for j := i; j < len(expr); {
			switch expr[j] {
			case end:
				return j + 1, expr[i:j], nil
			case '"', '\'', '`':
				k, err := skipString(j)
				if err != nil {
					return 0, "", err
				}
				j = k
			default:
				j++
			}
		}
		return 0, "", fmt.Errorf("column %d: %q not closed", i, end)
	}
	nextNonSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '#':
			if j := strings.IndexByte(expr[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(expr)
			}
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{':
			j, inner, err := skipTo(i+1, '}')
			if err != nil {
				return nil, err
			}
			if strings.Contains(inner, "__name__") {
				return nil, fmt.Errorf("column %d: a selector by __name__: name the metric before the braces", i+1)
			}
			i = j
		case c == '[':
			j, _, err := skipTo(i+1, ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			next := nextNonSpace(j)
			switch {
			case promqlLabelLists[strings.ToLower(word)]:
				if next < len(expr) && expr[next] == '(' {
					k, _, err := skipTo(next+1, ')')
					if err != nil {
						return nil, err
					}
					j = k
				}
			case promqlKeywords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// A function or an aggregation.
			case slices.Contains([]string{"by", "without"}, strings.ToLower(wordAt(expr, next))):
				// An aggregation with its grouping first: sum by (a) (x).
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}

// wordAt returns the identifier that starts at i ("" when none does).
func wordAt(s string, i int) string {
	j := i
	for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	return s[i:j]
}
