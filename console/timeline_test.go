package console

import (
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// tlEvents is a story told by the audit events a step writes: request,
// answer, then the schedule it chose.
type tlEvents struct {
	t0     time.Time
	events []pollwarden.Event
}

func (b *tlEvents) add(sec float64, k pollwarden.EventKind, d pollwarden.EventData) {
	b.events = append(b.events, pollwarden.Event{Seq: int64(len(b.events) + 1), Kind: k, Data: d,
		At: b.t0.Add(time.Duration(sec * float64(time.Second)))})
}

// poll records a request sent at sent, answered at answered with resp,
// and, when next > 0, the next poll planned at next by src, in the answer
// as the core records it.
func (b *tlEvents) poll(sent, answered float64, resp pollwarden.EventData, next float64, src pollwarden.DelaySource) {
	b.add(sent, pollwarden.EventRequestSent, pollwarden.EventData{})
	if next > 0 {
		resp.NextPollAt, resp.DelaySource, resp.Decision = b.at(next), src, "wait"
	}
	b.add(answered, pollwarden.EventResponseReceived, resp)
}

func (b *tlEvents) at(sec float64) *time.Time {
	t := b.t0.Add(time.Duration(sec * float64(time.Second)))
	return &t
}

// TestTimelineLayout: one mark per status request, placed in proportion
// on the axis, classed by its answer, with the wait planned after it by
// its source; the gap after a 429 is compared with the Retry-After it
// asked, so a request sent too early is named as such.
func TestTimelineLayout(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b := &tlEvents{t0: t0}
	b.add(0, pollwarden.EventSubmitted, pollwarden.EventData{})
	b.poll(0, 0.2, pollwarden.EventData{HTTPStatus: 200, State: "running"}, 2, pollwarden.DelayLocalBackoff)
	b.poll(2, 2.1, pollwarden.EventData{HTTPStatus: 429, RetryAfter: "5"}, 7.1, pollwarden.DelayRetryAfter)
	b.poll(7.2, 7.3, pollwarden.EventData{HTTPStatus: 503}, 9, pollwarden.DelayLocalBackoff)
	b.poll(9, 9.5, pollwarden.EventData{Transport: pollwarden.TransportTimeout}, 14, pollwarden.DelayLocalBackoff)
	// A callback brought the next request forward: its schedule is the
	// one that held.
	b.add(10, pollwarden.EventNextCheckScheduled, pollwarden.EventData{NextPollAt: b.at(12), DelaySource: pollwarden.DelayCallback})
	b.poll(12, 12.1, pollwarden.EventData{HTTPStatus: 429, RetryAfter: "10"}, 22.1, pollwarden.DelayRetryAfter)
	b.add(12.5, pollwarden.EventExtensionRequested, pollwarden.EventData{}) // not a request: no mark
	b.poll(15, 15.1, pollwarden.EventData{HTTPStatus: 304}, 0, "")
	b.add(16, pollwarden.EventRequestSent, pollwarden.EventData{}) // a crash before the answer
	deadline, now := t0.Add(20*time.Second), t0.Add(18*time.Second)

	tl := layoutTimeline(b.events, t0, deadline, now)
	if len(tl.Marks) != 7 {
		t.Fatalf("%d marks, want one per request (7)", len(tl.Marks))
	}
	var classes []string
	for _, m := range tl.Marks {
		classes = append(classes, m.Class)
	}
	if got, want := strings.Join(classes, " "), "state rate-limited server-error transport rate-limited unchanged unanswered"; got != want {
		t.Errorf("classes %q, want %q", got, want)
	}
	// The axis runs from the start to the last planned time (22.1 s),
	// which holds the deadline (20 s) and now (18 s).
	if !tl.End.Equal(t0.Add(22100 * time.Millisecond)) {
		t.Errorf("axis ends %v, want 22.1 s after the start", tl.End.Sub(t0))
	}
	at := func(sec float64) float64 { return tlLeft + sec/22.1*(tlRight-tlLeft) }
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.01 {
			t.Errorf("%s at x=%.2f, want %.2f", what, got, want)
		}
	}
	near("request 3", tl.Marks[2].X, at(7.2))
	if tl.Break != 0 || tl.Deadline.Beyond || tl.Now.Beyond {
		t.Errorf("the axis is broken (%v) though the deadline and now fit it", tl.Break)
	}
	near("the deadline", tl.Deadline.X, at(20))
	near("now", tl.Now.X, at(18))
	rl := tl.Marks[1]
	near("the end of the 429's asked wait", rl.AskX, at(7.1))
	near("the end of the 429's planned wait", rl.NextX, at(7.1))
	if rl.Source != pollwarden.DelayRetryAfter || rl.Asked != "5s" || rl.Gap != "5.1s" || rl.Respected != "yes" {
		t.Errorf("the first 429: source %s, asked %q, gap %q, respected %q", rl.Source, rl.Asked, rl.Gap, rl.Respected)
	}
	early := tl.Marks[4]
	if early.Asked != "10s" || early.Gap != "2.9s" || early.Respected != "no" || !strings.Contains(early.Title, "not respected") {
		t.Errorf("the second 429, followed 2.9 s later: asked %q, gap %q, respected %q, title %q", early.Asked, early.Gap, early.Respected, early.Title)
	}
	if m := tl.Marks[3]; m.SourceText != "callback" || m.Answer != "transport failure (timeout)" {
		t.Errorf("request 4: %+v", m)
	}
	if m := tl.Marks[5]; m.HasWait || m.Answer != "HTTP 304, unchanged" {
		t.Errorf("request 6 planned nothing: %+v", m)
	}
	if !strings.HasPrefix(tl.Caption, "Request timeline: 7 status requests from 2026-03-01 09:00:00Z") {
		t.Errorf("caption %q", tl.Caption)
	}
}

// TestTimelineFarDeadline: a deadline far past the requests is drawn past
// a break in the axis, with how far it is, and named in the caption,
// instead of squeezing every mark into the axis's first pixels; likewise
// a "now" long after an operation ended.
func TestTimelineFarDeadline(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b := &tlEvents{t0: t0}
	b.poll(0, 1, pollwarden.EventData{HTTPStatus: 200, State: "running"}, 4, pollwarden.DelayLocalBackoff)
	b.poll(4, 5, pollwarden.EventData{HTTPStatus: 200, State: "succeeded"}, 0, "")
	tl := layoutTimeline(b.events, t0, t0.Add(time.Hour), t0.Add(2*time.Hour))
	if tl.Break == 0 || tl.Right != tlRight-tlBeyond {
		t.Errorf("the axis is not broken: break %v, right %d", tl.Break, tl.Right)
	}
	d, n := tl.Deadline, tl.Now
	if d == nil || n == nil || !d.Beyond || !n.Beyond || d.X <= tl.Break || n.X <= d.X || n.X > tlRight {
		t.Fatalf("deadline %+v and now %+v: want both past the break, the deadline first", d, n)
	}
	if d.Label != "deadline +59m55s" || n.Label != "now +1h59m" {
		t.Errorf("labels %q and %q: want how far past the axis's end each is", d.Label, n.Label)
	}
	if !strings.Contains(tl.Caption, "the deadline 2026-03-01 10:00:00Z is beyond the axis") || !strings.Contains(tl.Caption, "now (2026-03-01 11:00:00Z) is 1h59m after its end") {
		t.Errorf("caption %q", tl.Caption)
	}
	if x := tl.Marks[1].X; x != tlLeft+4.0/5*(tlRight-tlBeyond-tlLeft) {
		t.Errorf("the second request at x=%v: the axis was stretched", x)
	}
	empty := layoutTimeline(nil, t0, t0.Add(time.Minute), t0.Add(10*time.Second))
	if len(empty.Marks) != 0 || empty.Now == nil || !strings.HasPrefix(empty.Caption, "Request timeline: 0 status requests") {
		t.Errorf("no requests yet: %+v", empty)
	}
}

// BenchmarkOperationTimeline lays out and renders the timeline of an
// operation that used 40 status requests (a contract's usual budget) and
// a thousand (the page's worst case, re-rendered on every live change).
func BenchmarkOperationTimeline(b *testing.B) {
	for _, n := range []int{40, 1000} {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			ev := &tlEvents{t0: t0}
			for i := range n {
				s := float64(i * 5)
				ev.poll(s, s+0.2, pollwarden.EventData{HTTPStatus: 200, State: "running"}, s+5, pollwarden.DelayLocalBackoff)
			}
			page := parsePages()["operation"]
			b.ReportAllocs()
			for b.Loop() {
				tl := layoutTimeline(ev.events, t0, t0.Add(2*time.Hour), t0.Add(time.Duration(n*5+1)*time.Second))
				if err := page.ExecuteTemplate(io.Discard, "timeline", tl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
