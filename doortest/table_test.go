package doortest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// class is how a door answered, as far as the suite compares doors.
type class string

const (
	accepted  class = "accepted"
	invalid   class = "refused-invalid"
	conflict  class = "refused-conflict"
	forbidden class = "refused-forbidden"
	notFound  class = "not-found"
	// refused is what a door that cannot tell refusals apart (the CLI's
	// exit 2, an MCP tool error) reports for any of the four above.
	refused class = "refused"
	// notOffered: the door has no way to make this request.
	notOffered class = "not-offered"
	// broken: an internal error, never expected.
	broken class = "internal-error"
)

func (c class) refusal() bool {
	switch c {
	case invalid, conflict, forbidden, notFound, refused:
		return true
	}
	return false
}

// kind is which use case a request drives.
type kind string

const (
	create  kind = "create"
	extend  kind = "extend"
	decide  kind = "decide"
	abandon kind = "abandon"
	// edit is no door's request: the rig's contract file is rewritten
	// (editOld → editNew) and reloaded, as a person edits it between two
	// requests.
	edit kind = "edit"
)

// request is one request as a user would type it, before a door turns it
// into flags, a JSON body or tool arguments. Zero fields are omitted.
type request struct {
	kind kind
	// create
	opID, contract, job string
	vars                map[string]string
	deadline            string // see resolveDeadline
	maxRequests         int
	// priority as typed ("" gives none): a door sends a number as a
	// number and anything else as text.
	priority string
	// extend, decide, abandon
	target                   string
	extraTime, justification string
	extraRequests            int
	option                   string
	// escalation is the question a decision names (escalation.id).
	escalation string
	// the use cases of usecases_test.go: a list's phase and limit as
	// typed, and who asks when it is not the door's usual caller (another
	// agent's token)
	phase, limit, as string
	// edit
	editOld, editNew string
}

// answer is a door's answer reduced to what doors must agree on.
type answer struct {
	class class
	id    string // the operation's id, when accepted
	text  string // the problem as the door said it
}

// door replays a request through one of pollwarden's doors, against r.
type door interface {
	// fine is true when the door tells refusals apart (the HTTP API's
	// status codes); the others answer refused for any of them.
	fine() bool
	do(t *testing.T, r *rig, req request) answer
}

// row is one line of the table: requests sent first (each must be
// accepted), then the request under test and what every door must say.
type row struct {
	name   string
	before []request
	req    request
	want   class
	// field must appear in the problem's text (compared without case,
	// '_' and '-' read as spaces, so "max_status_requests", "max status
	// requests" and "--max-requests"-style names meet).
	field string
	// sameID: the answer names the operation the last before-request
	// created (a resume, not a second operation).
	sameID bool
	// absent must not appear in the answer (an operation a list leaves
	// out, or one the caller may not see).
	absent string
}

func ok(job string) request { return request{kind: create, contract: "export", job: job} }

func withID(id string, r request) request { r.opID = id; return r }

func editContract(old, new string) request { return request{kind: edit, editOld: old, editNew: new} }

func withVars(region string, r request) request {
	r.vars = map[string]string{"region": region}
	return r
}

func withDeadline(d string, r request) request { r.deadline = d; return r }
func withPriority(p string, r request) request { r.priority = p; return r }

// number is s as a JSON number when it is one, else as text: what a
// client that got a priority wrong would send.
func number(s string) any {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return s
}

func ext(target, extra string, n int) request {
	return request{kind: extend, target: target, extraTime: extra, extraRequests: n, justification: "the export holds 2M rows"}
}

// table is the suite. Every door runs every row; a door that does not
// offer a use case skips its rows, by name, in the test log.
var table = []row{
	{name: "create", req: ok("ok"), want: accepted},
	{name: "create with an id", req: withID("op-mine", ok("ok")), want: accepted},
	{name: "create twice without an id resumes", before: []request{ok("ok")}, req: ok("ok"), want: accepted, sameID: true},
	{name: "create twice with an id and the same body resumes", before: []request{withID("op-same", ok("ok"))}, req: withID("op-same", ok("ok")), want: accepted, sameID: true},
	{name: "create twice with an id and another job", before: []request{withID("op-same", ok("ok"))}, req: withID("op-same", ok("ok2")), want: conflict, field: "op-same"},
	// One matcher (package operations' resume.go) judges a resume through
	// every door, so each says in the same words what differs.
	{name: "resume with another job says so", before: []request{withID("op-job", ok("ok"))}, req: withID("op-job", ok("ok2")), want: conflict,
		field: "cannot be resumed with this request: the job differs (created for job ok, asked for job ok2)"},
	{name: "resume with other variables says so", before: []request{withID("op-vars", withVars("us", ok("ok")))}, req: withID("op-vars", withVars("eu", ok("ok"))), want: conflict,
		field: "the job's variables differ (created with region=us, asked with region=eu)"},
	{name: "create after the state table was edited", before: []request{ok("run"), editContract("pending: [queued, running]", "pending: [queued, running, paused]")},
		req: ok("run"), want: conflict, field: "the state table changed"},
	{name: "create after a limit was raised", before: []request{ok("run"), editContract("max_status_requests: 5", "max_status_requests: 9")},
		req: ok("run"), want: conflict, field: "limits.max_status_requests 5 → 9"},
	{name: "create after the status URL was edited", before: []request{ok("run"), editContract(`/jobs/{job_id}"`, `/jobs/{job_id}?v=2"`)},
		req: ok("run"), want: conflict, field: "the status call"},
	{name: "create after a limit was lowered resumes", before: []request{ok("run"), editContract("max_status_requests: 5", "max_status_requests: 4")},
		req: ok("run"), want: accepted, sameID: true},
	{name: "unknown contract", req: request{kind: create, contract: "nope", job: "ok"}, want: invalid, field: "contract"},
	{name: "no job", req: request{kind: create, contract: "export"}, want: invalid, field: "job id"},
	{name: "limit above the contract's", req: func() request { r := ok("ok"); r.maxRequests = 99; return r }(), want: invalid, field: "max status requests"},
	{name: "priority 9: an agent lowers its own", req: withPriority("9", ok("ok")), want: accepted},
	{name: "priority 5: the default", req: withPriority("5", ok("ok")), want: accepted},
	{name: "priority 4: more urgent, only an approver's", req: withPriority("4", ok("ok")), want: forbidden, field: "priority"},
	{name: "priority 0", req: withPriority("0", ok("ok")), want: invalid, field: "priority"},
	{name: "priority 10", req: withPriority("10", ok("ok")), want: invalid, field: "priority"},
	{name: "priority not a number", req: withPriority("x", ok("ok")), want: invalid, field: "priority"},
	{name: "var outside its pattern", req: func() request { r := ok("ok"); r.vars = map[string]string{"region": "EU!"}; return r }(), want: invalid, field: "var"},
	{name: "var not declared", req: func() request { r := ok("ok"); r.vars = map[string]string{"zone": "a"}; return r }(), want: invalid, field: "var"},
	{name: "var inside its pattern", req: func() request { r := ok("ok"); r.vars = map[string]string{"region": "us"}; return r }(), want: accepted},

	{name: "id with a space", req: withID("op 1", ok("ok")), want: invalid, field: "operation id"},
	{name: "id with a slash", req: withID("op/1", ok("ok")), want: invalid, field: "operation id"},
	{name: "id ..", req: withID("..", ok("ok")), want: invalid, field: "operation id"},
	{name: "id with a leading dot", req: withID(".op", ok("ok")), want: invalid, field: "operation id"},
	{name: "id with a control character", req: withID("op\x01x", ok("ok")), want: invalid, field: "operation id"},
	{name: "id with a newline", req: withID("op\nx", ok("ok")), want: invalid, field: "operation id"},
	{name: "id of 300 characters", req: withID(strings.Repeat("a", 300), ok("ok")), want: invalid, field: "operation id"},
	{name: "id of 128 characters", req: withID(strings.Repeat("a", 128), ok("ok")), want: accepted},
	{name: "id not UTF-8", req: withID("op-\xff", ok("ok")), want: invalid, field: "operation id"},
	{name: "id not ASCII", req: withID("op-é", ok("ok")), want: invalid, field: "operation id"},

	{name: "deadline 30s", req: withDeadline("30s", ok("ok")), want: accepted},
	{name: "deadline 9m30s", req: withDeadline("9m30s", ok("ok")), want: accepted},
	{name: "deadline RFC 3339 UTC", req: withDeadline("in 5m Z", ok("ok")), want: accepted},
	{name: "deadline RFC 3339 with an offset", req: withDeadline("in 5m +02:00", ok("ok")), want: accepted},
	{name: "deadline RFC 3339 with fractions", req: withDeadline("in 5m frac", ok("ok")), want: accepted},
	{name: "deadline 0s", req: withDeadline("0s", ok("ok")), want: invalid, field: "deadline"},
	{name: "deadline negative", req: withDeadline("-5m", ok("ok")), want: invalid, field: "deadline"},
	{name: "deadline in words", req: withDeadline("tomorrow", ok("ok")), want: invalid, field: "deadline"},
	{name: "deadline without a zone", req: withDeadline("in 5m nozone", ok("ok")), want: invalid, field: "deadline"},
	{name: "deadline in the past", req: withDeadline("in -1h Z", ok("ok")), want: invalid, field: "deadline"},
	{name: "deadline above the contract's", req: withDeadline("11m", ok("ok")), want: invalid, field: "deadline"},

	{name: "extension on a waiting operation", req: ext(opWaiting, "15m", 2), want: accepted},
	{name: "extension of requests only", req: ext(opWaiting, "0s", 2), want: accepted},
	{name: "extension of time only", req: ext(opWaiting, "15m", 0), want: accepted},
	{name: "extension asking for nothing", req: ext(opWaiting, "0s", 0), want: invalid, field: "extra time"},
	{name: "extension with a bad time", req: ext(opWaiting, "soon", 1), want: invalid, field: "extra time"},
	{name: "extension with negative requests", req: ext(opWaiting, "5m", -1), want: invalid, field: "extra status requests"},
	{name: "extension without justification", req: func() request { r := ext(opWaiting, "5m", 1); r.justification = " "; return r }(), want: invalid, field: "justification"},
	{name: "extension on a finished operation", req: ext(opDone, "0s", 1), want: conflict, field: "succeeded"},
	{name: "extension on an unknown operation", req: ext("op-nope", "5m", 1), want: notFound, field: "op-nope"},

	{name: "decision on a waiting operation", req: request{kind: decide, target: opWaiting, option: "extend"}, want: conflict, field: "waiting"},
	{name: "decision on an unknown operation", req: request{kind: decide, target: "op-nope", option: "extend"}, want: notFound, field: "op-nope"},
	{name: "owner abandons a waiting operation", req: request{kind: abandon, target: opWaiting}, want: accepted},
	{name: "abandon a finished operation", req: request{kind: abandon, target: opDone}, want: conflict, field: "succeeded"},
}

// resolveDeadline turns the table's relative times ("in 5m Z", "in 5m
// +02:00", "in 5m frac", "in 5m nozone") into RFC 3339 text from now;
// anything else is sent as written.
func resolveDeadline(s string, now time.Time) string {
	f, ok := strings.CutPrefix(s, "in ")
	if !ok {
		return s
	}
	d, form, _ := strings.Cut(f, " ")
	dd, err := time.ParseDuration(d)
	if err != nil {
		panic(err)
	}
	at := now.Add(dd)
	switch form {
	case "Z":
		return at.UTC().Format(time.RFC3339)
	case "+02:00":
		return at.In(time.FixedZone("", 2*3600)).Format(time.RFC3339)
	case "frac":
		return at.UTC().Format(time.RFC3339Nano)
	case "nozone":
		return at.UTC().Format("2006-01-02T15:04:05")
	}
	panic("unknown deadline form " + form)
}

// runTable replays every row through d and checks its answers.
func runTable(t *testing.T, d door) { runRows(t, d, table) }

// runRows replays rows through d and checks its answers.
func runRows(t *testing.T, d door, rows []row) {
	for _, rw := range rows {
		t.Run(rw.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			var lastID string
			for _, b := range rw.before {
				if b.kind == edit {
					r.editContract(t, b.editOld, b.editNew)
					continue
				}
				a := d.do(t, r, b)
				if a.class == notOffered {
					t.Skipf("this door does not offer %s", b.kind)
				}
				if a.class != accepted {
					t.Fatalf("before-request %+v: %s %s", b, a.class, a.text)
				}
				lastID = a.id
			}
			req := rw.req
			req.deadline = resolveDeadline(req.deadline, time.Now())
			before := r.facts(t)
			a := d.do(t, r, req)
			if a.class == notOffered {
				t.Skipf("this door does not offer %s", req.kind)
			}
			check(t, d, rw, a)
			if rw.sameID && a.id != lastID {
				t.Errorf("answered operation %q, want the one created before, %q", a.id, lastID)
			}
			if a.class.refusal() {
				if after := r.facts(t); !sameFacts(before, after) {
					t.Errorf("a refused request changed the store: operations and their event counts %v, were %v", after, before)
				}
			}
		})
	}
}

func check(t *testing.T, d door, rw row, a answer) {
	t.Helper()
	want := rw.want
	if !d.fine() && want.refusal() {
		want = refused
	}
	if a.class != want {
		t.Fatalf("answered %s, want %s: %s", a.class, want, a.text)
	}
	if rw.field != "" && !strings.Contains(normal(a.text), normal(rw.field)) {
		t.Errorf("the answer does not name %q: %s", rw.field, a.text)
	}
	if rw.absent != "" && strings.Contains(a.text, rw.absent) {
		t.Errorf("the answer names %q: %s", rw.absent, a.text)
	}
}

func normal(s string) string {
	return strings.NewReplacer("_", " ", "-", " ").Replace(strings.ToLower(s))
}

func sameFacts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
