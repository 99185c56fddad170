// Package redact hides the secrets a URL may carry before it is shown:
// the password of its user info and the values of its query parameters.
package redact

import (
	"net/url"
	"sort"
	"strings"
)

// Mask replaces a hidden value.
const Mask = "xxxxx"

// URL returns s with its password and query values replaced by Mask:
// http://admin:pw@host/graphql?token=t becomes
// http://admin:xxxxx@host/graphql?token=xxxxx. A string that does not parse
// as a URL is returned with everything between "://" and the last "@"
// before the host masked, so that nothing that looked like a secret is
// shown.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return opaque(s)
	}
	_, hasPassword := u.User.Password()
	if !hasPassword && u.RawQuery == "" {
		return s
	}
	if hasPassword {
		u.User = url.UserPassword(u.User.Username(), Mask)
	}
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			for range q[k] {
				if b.Len() > 0 {
					b.WriteByte('&')
				}
				b.WriteString(url.QueryEscape(k))
				b.WriteString("=" + Mask)
			}
		}
		u.RawQuery = b.String()
	}
	return u.String()
}

// opaque masks what may be user info in an unparsable URL.
func opaque(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	host := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = rest[:i]
	}
	at := strings.LastIndex(host, "@")
	if at < 0 {
		return s
	}
	return scheme + "://" + Mask + rest[at:]
}
