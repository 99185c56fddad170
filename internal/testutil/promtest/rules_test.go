package promtest

import (
	"slices"
	"testing"
)

// TestMetricNames: the names MetricNames finds, and what it refuses.
func TestMetricNames(t *testing.T) {
	cases := []struct {
		expr string
		want []string
	}{
		{`(sum(ckegen_leader) or vector(0)) < 1`, []string{"ckegen_leader"}},
		{`a_total{reason="X", state=~"on|by"} == 1 and on (instance) b == 1`, []string{"a_total", "b"}},
		{"rate(x_sum[15m]) / rate(x_count[15m] offset 1h) > 1e3", []string{"x_sum", "x_count"}},
		{`sum by (le, instance) (rate(h_bucket[5m])) > 0.5 unless ignoring(job) group_left(reason) c`, []string{"h_bucket", "c"}},
		{`sum without(instance)(d) * on(job) group_right e # f is a comment`, []string{"d", "e"}},
		{`label_replace(g, "dst", "$1", "src", "(.*)") > bool 3 or max_over_time(h[1h:5m])`, []string{"g", "h"}},
		{`time() - i > 900 and j:recorded`, []string{"i", "j:recorded"}},
		{`k and on(instance) l * ignoring (job) m`, []string{"k", "l", "m"}},
		{`Inf < NaN`, nil},
	}
	for _, c := range cases {
		got, err := MetricNames(c.expr)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("MetricNames(%q) = %q, %v; want %q", c.expr, got, err, c.want)
		}
	}
	for _, expr := range []string{`{__name__="x"}`, `x{a="b}`, `rate(x[5m)`, `sum by (a x`} {
		if got, err := MetricNames(expr); err == nil {
			t.Errorf("MetricNames(%q) = %q; want an error", expr, got)
		}
	}
}

// TestLabelValues: the values of equality matchers only.
func TestLabelValues(t *testing.T) {
	got := LabelValues(`a{reason="X"} == 1 and b{job="j", reason = "Y"} or c{reason=~"Z|W"} or d{reason!="V"} or e{other_reason="U"}`, "reason")
	if !slices.Equal(got, []string{"X", "Y"}) {
		t.Errorf("LabelValues = %q, want [X Y]", got)
	}
}
