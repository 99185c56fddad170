package redact

import "testing"

func TestURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://sabakan:10080/graphql", "http://sabakan:10080/graphql"},
		{"http://admin:s3cret@host/graphql", "http://admin:xxxxx@host/graphql"},
		{"https://user@host/graphql", "https://user@host/graphql"},
		{"http://host/graphql?token=abc&b=1&b=2", "http://host/graphql?b=xxxxx&b=xxxxx&token=xxxxx"},
		{"http://a:p%40ss@host:1/x?k=v", "http://a:xxxxx@host:1/x?k=xxxxx"},
		{"http://u:p w@host/%zz", "http://xxxxx@host/%zz"},
		{"not a url", "not a url"},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
