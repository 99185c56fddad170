package generator

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestInstantOrdersLikeTime: instant.compare agrees with time.Time.Compare,
// before and after 1970, with and without fractions of a second.
func TestInstantOrdersLikeTime(t *testing.T) {
	draw := func(t *rapid.T, label string) time.Time {
		sec := rapid.Int64Range(-5e9, 5e9).Draw(t, label+" sec")
		nsec := rapid.SampledFrom([]int64{0, 1, 5e8, 999999999}).Draw(t, label+" nsec")
		return time.Unix(sec, nsec).In(time.FixedZone("z", 3600*rapid.IntRange(-12, 12).Draw(t, label+" zone")))
	}
	rapid.Check(t, func(t *rapid.T) {
		a, b := draw(t, "a"), draw(t, "b")
		if rapid.Bool().Draw(t, "same second") {
			b = time.Unix(a.Unix(), int64(b.Nanosecond()))
		}
		if got, want := instantOf(a).compare(instantOf(b)), a.Compare(b); got != want {
			t.Fatalf("compare(%s, %s) = %d, want %d", a, b, got, want)
		}
	})
}
