package pollwarden

import (
	"net/http"
	"testing"
	"time"
)

func TestR7_ParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 4, 18, 10, 20, 31, 0, time.UTC)
	for name, c := range map[string]struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		"delta seconds":              {in: "120", want: 120 * time.Second},
		"zero":                       {in: "0", want: 0},
		"spaces":                     {in: " 7 ", want: 7 * time.Second},
		"IMF-fixdate":                {in: "Fri, 18 Apr 2025 10:22:31 GMT", want: 2 * time.Minute},
		"RFC 850 date":               {in: "Friday, 18-Apr-25 10:22:31 GMT", want: 2 * time.Minute},
		"asctime date":               {in: "Fri Apr 18 10:22:31 2025", want: 2 * time.Minute},
		"date in the past":           {in: "Fri, 18 Apr 2025 09:00:00 GMT", want: 0},
		"huge number is clamped":     {in: "99999999999999999999999", want: MaxRetryAfter},
		"far-future date is clamped": {in: "Fri, 01 Apr 7000 00:00:00 GMT", want: MaxRetryAfter},
		"negative":                   {in: "-5", wantErr: true},
		"plus sign":                  {in: "+5", wantErr: true},
		"fraction":                   {in: "1.5", wantErr: true},
		"garbage":                    {in: "soon", wantErr: true},
		"empty":                      {in: "", wantErr: true},
		"bad date":                   {in: "Fri, 32 Apr 2025 10:22:31 GMT", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRetryAfter(c.in, now)
			if (err != nil) != c.wantErr {
				t.Fatalf("ParseRetryAfter(%q) error = %v, want error %v", c.in, err, c.wantErr)
			}
			if err == nil && got != c.want {
				t.Fatalf("ParseRetryAfter(%q) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "Fri, 18 Apr 2025 10:22:31 GMT", "Friday, 18-Apr-25 10:22:31 GMT",
		"Fri Apr 18 10:22:31 2025", "99999999999999999999", "1e3", "", "\x00", "Fri, 01 Apr 7000 0:00:00 GMT"} {
		f.Add(s)
	}
	now := time.Date(2025, 4, 18, 10, 20, 31, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseRetryAfter(s, now)
		if err == nil && (d < 0 || d > MaxRetryAfter) {
			t.Fatalf("ParseRetryAfter(%q) = %s: outside [0, %s]", s, d, MaxRetryAfter)
		}
	})
}

// TestHTTPDateAsNetHTTP: the root package's own HTTP-date reading accepts
// and rejects what net/http's does, with the same instant.
func TestHTTPDateAsNetHTTP(t *testing.T) {
	for _, s := range []string{"Fri, 18 Apr 2025 10:22:31 GMT", "Friday, 18-Apr-25 10:22:31 GMT", "Fri Apr 18 10:22:31 2025",
		"Fri Apr  8 10:22:31 2025", "Fri, 32 Apr 2025 10:22:31 GMT", "Fri, 18 Apr 2025 10:22:31 UTC", "18 Apr 2025", "", "soon"} {
		got, gotErr := parseHTTPDate(s)
		want, wantErr := http.ParseTime(s)
		if (gotErr != nil) != (wantErr != nil) || !got.Equal(want) {
			t.Errorf("parseHTTPDate(%q) = %v, %v; net/http says %v, %v", s, got, gotErr, want, wantErr)
		}
	}
}
