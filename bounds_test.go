package pollwarden

import "testing"

func TestAddCountSaturates(t *testing.T) {
	for _, tc := range []struct{ a, n, want int }{
		{12, 4, 16}, {MaxCount - 1, 4, MaxCount}, {MaxCount, 1, MaxCount},
		{9223372036854775807, 4, 9223372036854775807}, {5, 0, 5}, {5, -3, 5},
	} {
		if got := AddCount(tc.a, tc.n); got != tc.want {
			t.Errorf("AddCount(%d, %d) = %d, want %d", tc.a, tc.n, got, tc.want)
		}
	}
}
