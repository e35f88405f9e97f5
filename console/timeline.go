package console

import (
	"fmt"
	"slices"
	"time"

	"github.com/pollwarden/pollwarden"
)

// The request timeline is drawn from the operation's audit events alone,
// so it shows what was recorded, not what the record says now: each status
// request is a mark on a time axis, coloured by its answer, followed by
// the wait that was then planned, drawn by who chose it. A gap after a 429
// that is shorter than the Retry-After it asked for is visible at a glance
// and named in the table.

// Timeline geometry, in SVG user units (the figure scales to its width).
const (
	tlWidth  = 960
	tlHeight = 132
	tlLeft   = 48
	tlRight  = tlWidth - 48
	tlAxisY  = 62
	tlWaitY  = 86
	tlAskY   = 34
	// tlStretch is how far past the requests the axis may reach to show
	// the deadline or "now": beyond it they would squeeze the requests
	// into a corner, so they are named in the caption instead.
	tlStretch = 1.25
	// tlNumbered is the most marks that are numbered on the axis.
	tlNumbered = 40
	// tlBeyond is the room right of a broken axis for the deadline and
	// "now" when they are too far to draw to scale.
	tlBeyond = 150
)

// timeline is the laid-out figure.
type timeline struct {
	Width, Height, Left, Right, AxisY, WaitY, AskY int
	Start, End                                     time.Time
	Marks                                          []tlMark
	Deadline, Now                                  *tlLine
	Caption                                        string
	Legend                                         []tlKey
	// Numbered is set when there are few enough marks for each to carry
	// its request number legibly.
	Numbered bool
	// Break is where the axis is broken (0: it is not), Right its end.
	Break float64
}

// tlMark is one status request.
type tlMark struct {
	N      int
	Sent   time.Time
	X      float64
	Class  string // state, unchanged, rate-limited, server-error, transport, other, unanswered
	Colour string
	Answer string
	// The wait planned after the answer, from AnswerX to NextX.
	HasWait        bool
	AnswerX, NextX float64
	Source         pollwarden.DelaySource
	SourceText     string
	WaitColour     string
	Dash           string
	Planned        string
	// Asked is the Retry-After the answer carried; AskX is where it ends.
	Asked string
	AskX  float64
	// Gap is how long after the answer the next request went out, and
	// Respected whether that honoured Asked ("" when nothing was asked).
	Gap       string
	Respected string
	Title     string
}

// tlLine is a vertical marker (the deadline, now). Beyond marks one
// drawn past the axis's break, not to scale, its label at LabelY.
type tlLine struct {
	X      float64
	Label  string
	Beyond bool
	LabelY int

	at       time.Time
	deadline bool
}

// tlKey is one entry of the legend.
type tlKey struct{ Colour, Text string }

// answerColours are the marks' colours by answer class.
var answerColours = map[string]string{
	"state": "#1e7b43", "unchanged": "#5c6773", "rate-limited": "#c77700", "server-error": "#b3261e",
	"transport": "#6a3d9a", "other": "#1d232b", "unanswered": "#ffffff",
}

// sourceStyles draw each delay source: a colour and a dash pattern, so
// the difference survives a grey printout.
var sourceStyles = map[pollwarden.DelaySource][2]string{
	pollwarden.DelayLocalBackoff:    {"#8a96a3", ""},
	pollwarden.DelayRetryAfter:      {"#c77700", "6 3"},
	pollwarden.DelayPollHint:        {"#1f5fbf", "2 3"},
	pollwarden.DelayCallback:        {"#1e7b43", "1 2"},
	pollwarden.DelayManualExtension: {"#1d232b", "8 2 2 2"},
}

// sourceNames say who chose the wait, in words.
var sourceNames = map[pollwarden.DelaySource]string{
	pollwarden.DelayLocalBackoff:    "local backoff",
	pollwarden.DelayRetryAfter:      "Retry-After",
	pollwarden.DelayPollHint:        "provider hint",
	pollwarden.DelayCallback:        "callback",
	pollwarden.DelayManualExtension: "approver's decision",
}

// tlAnswer is what a response event says, for a mark.
type tlAnswer struct {
	at    time.Time
	data  pollwarden.EventData
	valid bool
}

// tlRequest gathers one request's events before layout.
type tlRequest struct {
	n        int
	sent     time.Time
	answer   tlAnswer
	next     *time.Time
	source   pollwarden.DelaySource
	nextSent *time.Time
}

// layoutTimeline builds the figure from events (in their order) for an
// operation that started at start, with deadline and now.
func layoutTimeline(events []pollwarden.Event, start, deadline, now time.Time) timeline {
	reqs := gatherRequests(events)
	tl := timeline{Width: tlWidth, Height: tlHeight, Left: tlLeft, Right: tlRight, AxisY: tlAxisY, WaitY: tlWaitY, AskY: tlAskY, Start: start}
	end := start
	for _, r := range reqs {
		end = later(end, r.sent, r.answer.at)
		if r.next != nil {
			end = later(end, *r.next)
		}
		if asked, ok := askedWait(r); ok {
			end = later(end, r.answer.at.Add(asked))
		}
	}
	if len(reqs) == 0 {
		end = now
	}
	span := max(end.Sub(start), time.Second)
	limit := start.Add(time.Duration(float64(span) * tlStretch))
	onAxis := func(t time.Time) bool { return !t.After(limit) && !t.Before(start) }
	if onAxis(deadline) {
		end = later(end, deadline)
	}
	if onAxis(now) {
		end = later(end, now)
	}
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	tl.End = end
	var beyond []tlLine // the deadline and now, when too far to draw to scale
	if deadline.After(limit) {
		beyond = append(beyond, tlLine{at: deadline, Label: "deadline", deadline: true})
	}
	if now.After(limit) {
		beyond = append(beyond, tlLine{at: now, Label: "now"})
	}
	if len(beyond) > 0 {
		// The axis is broken: it stops short, and what lies beyond is
		// drawn past the break, in time order, with how far it is.
		tl.Right = tlRight - tlBeyond
		tl.Break = float64(tl.Right) + 10
	}
	x := func(t time.Time) float64 {
		f := float64(t.Sub(start)) / float64(end.Sub(start))
		return float64(tlLeft) + min(max(f, 0), 1)*float64(tl.Right-tlLeft)
	}
	for _, r := range reqs {
		tl.Marks = append(tl.Marks, layoutMark(r, x))
	}
	tl.Numbered = len(reqs) <= tlNumbered
	tl.Caption = fmt.Sprintf("Request timeline: %d status %s from %s to %s", len(reqs), plural(len(reqs), "request", "requests"), clock(start), clock(end))
	if onAxis(deadline) {
		tl.Deadline = &tlLine{X: x(deadline), Label: "deadline"}
	}
	if onAxis(now) {
		tl.Now = &tlLine{X: x(now), Label: "now"}
	}
	slices.SortFunc(beyond, func(a, b tlLine) int { return a.at.Compare(b.at) })
	for i, b := range beyond {
		b.Beyond, b.LabelY = true, tlWaitY+14+12*i
		b.X = float64(tlRight) - float64(len(beyond)-1-i)*tlBeyond/2 - 10
		b.Label += " +" + age(b.at.Sub(end))
		if b.deadline {
			tl.Deadline = &b
			tl.Caption += fmt.Sprintf("; the deadline %s is beyond the axis", clock(deadline))
		} else {
			tl.Now = &b
			tl.Caption += fmt.Sprintf("; now (%s) is %s after its end", clock(now), age(now.Sub(end)))
		}
	}
	tl.Caption += "."
	for _, c := range []string{"state", "unchanged", "rate-limited", "server-error", "transport", "other"} {
		tl.Legend = append(tl.Legend, tlKey{Colour: answerColours[c], Text: classNames[c]})
	}
	return tl
}

// classNames name the answer classes in the legend.
var classNames = map[string]string{
	"state": "2xx with a state", "unchanged": "304 unchanged", "rate-limited": "429 rate-limited",
	"server-error": "5xx", "transport": "transport failure", "other": "other answer", "unanswered": "no answer recorded",
}

// gatherRequests pairs each status request with its answer, the wait
// then planned (the answer's own schedule, or the last one recorded
// before the next request: a callback, a late wake-up's spread or a
// decision may have replaced it) and when the next one went.
func gatherRequests(events []pollwarden.Event) []*tlRequest {
	var reqs []*tlRequest
	var cur *tlRequest
	for _, e := range events {
		switch e.Kind {
		case pollwarden.EventRequestSent:
			if cur != nil {
				t := e.At
				cur.nextSent = &t
			}
			cur = &tlRequest{n: len(reqs) + 1, sent: e.At}
			reqs = append(reqs, cur)
		case pollwarden.EventResponseReceived:
			if cur != nil && !cur.answer.valid {
				cur.answer = tlAnswer{at: e.At, data: e.Data, valid: true}
				// An answer that escalated names the time it would have
				// needed (past the deadline), which was never planned.
				if e.Data.NextPollAt != nil && e.Data.Reason == "" {
					t := *e.Data.NextPollAt
					cur.next, cur.source = &t, e.Data.DelaySource
				}
			}
		case pollwarden.EventNextCheckScheduled:
			if cur != nil && cur.answer.valid && e.Data.NextPollAt != nil {
				t := *e.Data.NextPollAt
				cur.next, cur.source = &t, e.Data.DelaySource
			}
		}
	}
	return reqs
}

// askedWait is the Retry-After an answer carried, as a wait from the
// answer; false when there was none or it did not parse.
func askedWait(r *tlRequest) (time.Duration, bool) {
	if !r.answer.valid || r.answer.data.RetryAfter == "" {
		return 0, false
	}
	d, err := pollwarden.ParseRetryAfter(r.answer.data.RetryAfter, r.answer.at)
	return d, err == nil
}

func layoutMark(r *tlRequest, x func(time.Time) float64) tlMark {
	m := tlMark{N: r.n, Sent: r.sent, X: x(r.sent)}
	m.Class, m.Answer = answerClass(r.answer)
	m.Colour = answerColours[m.Class]
	if r.next != nil {
		st, ok := sourceStyles[r.source]
		if !ok {
			st = [2]string{"#8a96a3", ""}
		}
		m.HasWait, m.AnswerX, m.NextX = true, x(r.answer.at), x(*r.next)
		m.Source, m.WaitColour, m.Dash = r.source, st[0], st[1]
		m.SourceText = sourceNames[r.source]
		if m.SourceText == "" {
			m.SourceText = clean(string(r.source))
		}
		m.Planned = age(r.next.Sub(r.answer.at))
	}
	asked, hasAsk := askedWait(r)
	if hasAsk {
		m.Asked, m.AskX = age(asked), x(r.answer.at.Add(asked))
	}
	if r.nextSent != nil && r.answer.valid {
		gap := r.nextSent.Sub(r.answer.at)
		m.Gap = seconds(gap)
		if hasAsk {
			m.Respected = "yes"
			if gap < asked {
				m.Respected = "no"
			}
		}
	}
	m.Title = fmt.Sprintf("Request %d at %s: %s", m.N, clock(r.sent), m.Answer)
	if m.HasWait {
		m.Title += fmt.Sprintf("; next planned %s later by %s", m.Planned, m.SourceText)
	}
	if hasAsk {
		m.Title += "; Retry-After asked " + m.Asked
		if m.Respected == "no" {
			m.Title += ", not respected"
		}
	}
	return m
}

// answerClass names an answer's class and says it in words.
func answerClass(a tlAnswer) (class, text string) {
	d := a.data
	switch {
	case !a.valid:
		return "unanswered", "no answer recorded"
	case d.Transport != "":
		return "transport", "transport failure (" + clean(d.Transport) + ")"
	case d.HTTPStatus == 0:
		return "transport", "transport failure"
	case d.HTTPStatus == 304:
		return "unchanged", "HTTP 304, unchanged"
	case d.HTTPStatus == 429:
		return "rate-limited", "HTTP 429, rate-limited"
	case d.HTTPStatus >= 500:
		return "server-error", fmt.Sprintf("HTTP %d", d.HTTPStatus)
	case d.HTTPStatus >= 200 && d.HTTPStatus < 300:
		if d.State != "" {
			return "state", fmt.Sprintf("HTTP %d, state %s", d.HTTPStatus, clean(d.State))
		}
		return "state", fmt.Sprintf("HTTP %d", d.HTTPStatus)
	}
	return "other", fmt.Sprintf("HTTP %d", d.HTTPStatus)
}

func later(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// seconds shows a gap to a tenth of a second, the precision at which a
// Retry-After in whole seconds is judged.
func seconds(d time.Duration) string {
	if d >= time.Minute {
		return age(d)
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
