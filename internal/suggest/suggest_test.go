package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"cri_endpoint", "config", "extra_args", "extra_binds", "extra_env", "kube-api", "kubelet", "etcd", "name", "nodes"}
	cases := []struct{ in, want string }{
		{"cri_endpiont", "cri_endpoint"}, // transposition: distance 2
		{"criEndpoint", "cri_endpoint"},  // case and a separator
		{"CRI-ENDPOINT", "cri_endpoint"},
		{"kube_api", "kube-api"},
		{"kubelt", "kubelet"},
		{"etc", "etcd"},
		{"nodez", "nodes"},
		{"extra_arg", "extra_args"},
		{"extra_bind", "extra_binds"},
		{"x", ""},                // nothing is one edit away
		{"extra", ""},            // four edits from extra_env: not a typo
		{"completely_other", ""}, // far from everything
		{"", ""},
	}
	for _, c := range cases {
		got, ok := Closest(c.in, known)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Closest(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	if got, ok := Closest("a", nil); ok || got != "" {
		t.Errorf("Closest with nothing known = %q, %v", got, ok)
	}
}

func TestTiesGoToTheEarlierName(t *testing.T) {
	for _, known := range [][]string{{"ab", "ac"}, {"ac", "ab"}} {
		if got, _ := Closest("aa", known); got != known[0] {
			t.Errorf("Closest(aa, %v) = %q, want %q", known, got, known[0])
		}
	}
}
