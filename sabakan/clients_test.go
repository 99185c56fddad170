package sabakan

import "testing"

// TestClients: one client per URL, reused while the URL stays the same,
// made anew when it changes; options NewClient refuses are an error.
func TestClients(t *testing.T) {
	cs := Clients{Options: Options{Retries: -1}}
	a, err := cs.For("http://a.example/graphql")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := cs.For("http://a.example/graphql"); again != a {
		t.Error("the same URL made a new client")
	}
	b, err := cs.For("http://b.example/graphql")
	if err != nil || b == a || b.url != "http://b.example/graphql" {
		t.Errorf("another URL: %v (%v), the same client %v", b, err, b == a)
	}
	bad := Clients{Options: Options{CAFile: "/nonexistent/ca.pem"}}
	if _, err := bad.For("https://c.example/graphql"); err == nil {
		t.Error("a CA file that does not exist gave no error")
	}
}
