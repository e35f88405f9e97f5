package uritemplate

import (
	"strings"
	"testing"
)

// rfcVars are the string variables of RFC 6570 section 3.2 (which also
// cover those of section 1.2); "undef" is absent on purpose.
var rfcVars = map[string]string{
	"dub": "me/too", "hello": "Hello World!", "half": "50%", "var": "value",
	"who": "fred", "base": "http://example.com/home/", "path": "/foo/bar",
	"v": "6", "x": "1024", "y": "768", "empty": "",
}

// rfcCases are RFC 6570's examples for string values, by section.
var rfcCases = []struct{ section, tmpl, want string }{
	// 1.2, level 1.
	{"1.2 L1", "{var}", "value"},
	{"1.2 L1", "{hello}", "Hello%20World%21"},
	// 1.2, level 2.
	{"1.2 L2", "{+var}", "value"},
	{"1.2 L2", "{+hello}", "Hello%20World!"},
	{"1.2 L2", "{+path}/here", "/foo/bar/here"},
	{"1.2 L2", "here?ref={+path}", "here?ref=/foo/bar"},
	{"1.2 L2", "X{#var}", "X#value"},
	{"1.2 L2", "X{#hello}", "X#Hello%20World!"},
	// 1.2, level 3.
	{"1.2 L3", "map?{x,y}", "map?1024,768"},
	{"1.2 L3", "{x,hello,y}", "1024,Hello%20World%21,768"},
	{"1.2 L3", "{+x,hello,y}", "1024,Hello%20World!,768"},
	{"1.2 L3", "{+path,x}/here", "/foo/bar,1024/here"},
	{"1.2 L3", "{#x,hello,y}", "#1024,Hello%20World!,768"},
	{"1.2 L3", "{#path,x}/here", "#/foo/bar,1024/here"},
	{"1.2 L3", "X{.var}", "X.value"},
	{"1.2 L3", "X{.x,y}", "X.1024.768"},
	{"1.2 L3", "{/var}", "/value"},
	{"1.2 L3", "{/var,x}/here", "/value/1024/here"},
	{"1.2 L3", "{;x,y}", ";x=1024;y=768"},
	{"1.2 L3", "{;x,y,empty}", ";x=1024;y=768;empty"},
	{"1.2 L3", "{?x,y}", "?x=1024&y=768"},
	{"1.2 L3", "{?x,y,empty}", "?x=1024&y=768&empty="},
	{"1.2 L3", "?fixed=yes{&x}", "?fixed=yes&x=1024"},
	{"1.2 L3", "{&x,y,empty}", "&x=1024&y=768&empty="},
	// 1.2, level 4, string values only.
	{"1.2 L4", "{var:3}", "val"},
	{"1.2 L4", "{var:30}", "value"},
	{"1.2 L4", "{+path:6}/here", "/foo/b/here"},
	{"1.2 L4", "{#path:6}/here", "#/foo/b/here"},
	{"1.2 L4", "X{.var:3}", "X.val"},
	{"1.2 L4", "{/var:1,var}", "/v/value"},
	{"1.2 L4", "{;hello:5}", ";hello=Hello"},
	{"1.2 L4", "{?var:3}", "?var=val"},
	{"1.2 L4", "{&var:3}", "&var=val"},
	// 3.2.1 variable expansion.
	{"3.2.1", "{var}", "value"},
	{"3.2.1", "{hello}", "Hello%20World%21"},
	{"3.2.1", "{half}", "50%25"},
	{"3.2.1", "O{empty}X", "OX"},
	{"3.2.1", "O{undef}X", "OX"},
	{"3.2.1", "{x,y}", "1024,768"},
	{"3.2.1", "{x,hello,y}", "1024,Hello%20World%21,768"},
	{"3.2.1", "?{x,empty}", "?1024,"},
	{"3.2.1", "?{x,undef}", "?1024"},
	{"3.2.1", "?{undef,y}", "?768"},
	{"3.2.1", "{var:3}", "val"},
	{"3.2.1", "{var:30}", "value"},
	// 3.2.2 simple string expansion: the same table as 3.2.1 for strings.
	{"3.2.2", "{half}", "50%25"},
	{"3.2.2", "?{x,empty}", "?1024,"},
	// 3.2.3 reserved expansion.
	{"3.2.3", "{+var}", "value"},
	{"3.2.3", "{+hello}", "Hello%20World!"},
	{"3.2.3", "{+half}", "50%25"},
	{"3.2.3", "{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"},
	{"3.2.3", "{+base}index", "http://example.com/home/index"},
	{"3.2.3", "O{+empty}X", "OX"},
	{"3.2.3", "O{+undef}X", "OX"},
	{"3.2.3", "{+path}/here", "/foo/bar/here"},
	{"3.2.3", "here?ref={+path}", "here?ref=/foo/bar"},
	{"3.2.3", "up{+path}{var}/here", "up/foo/barvalue/here"},
	{"3.2.3", "{+x,hello,y}", "1024,Hello%20World!,768"},
	{"3.2.3", "{+path,x}/here", "/foo/bar,1024/here"},
	{"3.2.3", "{+path:6}/here", "/foo/b/here"},
	// 3.2.4 fragment expansion.
	{"3.2.4", "{#var}", "#value"},
	{"3.2.4", "{#hello}", "#Hello%20World!"},
	{"3.2.4", "{#half}", "#50%25"},
	{"3.2.4", "foo{#empty}", "foo#"},
	{"3.2.4", "foo{#undef}", "foo"},
	{"3.2.4", "{#x,hello,y}", "#1024,Hello%20World!,768"},
	{"3.2.4", "{#path,x}/here", "#/foo/bar,1024/here"},
	{"3.2.4", "{#path:6}/here", "#/foo/b/here"},
	// 3.2.5 label expansion.
	{"3.2.5", "{.who}", ".fred"},
	{"3.2.5", "{.who,who}", ".fred.fred"},
	{"3.2.5", "{.half,who}", ".50%25.fred"},
	{"3.2.5", "X{.var}", "X.value"},
	{"3.2.5", "X{.empty}", "X."},
	{"3.2.5", "X{.undef}", "X"},
	{"3.2.5", "X{.var:3}", "X.val"},
	// 3.2.6 path segment expansion.
	{"3.2.6", "{/who}", "/fred"},
	{"3.2.6", "{/who,who}", "/fred/fred"},
	{"3.2.6", "{/half,who}", "/50%25/fred"},
	{"3.2.6", "{/who,dub}", "/fred/me%2Ftoo"},
	{"3.2.6", "{/var}", "/value"},
	{"3.2.6", "{/var,empty}", "/value/"},
	{"3.2.6", "{/var,undef}", "/value"},
	{"3.2.6", "{/var,x}/here", "/value/1024/here"},
	{"3.2.6", "{/var:1,var}", "/v/value"},
	// 3.2.7 path-style parameter expansion.
	{"3.2.7", "{;who}", ";who=fred"},
	{"3.2.7", "{;half}", ";half=50%25"},
	{"3.2.7", "{;empty}", ";empty"},
	{"3.2.7", "{;v,empty,who}", ";v=6;empty;who=fred"},
	{"3.2.7", "{;v,bar,who}", ";v=6;who=fred"},
	{"3.2.7", "{;x,y}", ";x=1024;y=768"},
	{"3.2.7", "{;x,y,empty}", ";x=1024;y=768;empty"},
	{"3.2.7", "{;x,y,undef}", ";x=1024;y=768"},
	{"3.2.7", "{;hello:5}", ";hello=Hello"},
	// 3.2.8 form-style query expansion.
	{"3.2.8", "{?who}", "?who=fred"},
	{"3.2.8", "{?half}", "?half=50%25"},
	{"3.2.8", "{?x,y}", "?x=1024&y=768"},
	{"3.2.8", "{?x,y,empty}", "?x=1024&y=768&empty="},
	{"3.2.8", "{?x,y,undef}", "?x=1024&y=768"},
	{"3.2.8", "{?var:3}", "?var=val"},
	// 3.2.9 form-style query continuation.
	{"3.2.9", "{&who}", "&who=fred"},
	{"3.2.9", "{&half}", "&half=50%25"},
	{"3.2.9", "?fixed=yes{&x}", "?fixed=yes&x=1024"},
	{"3.2.9", "{&x,y,empty}", "&x=1024&y=768&empty="},
	{"3.2.9", "{&var:3}", "&var=val"},
}

func TestRFC6570Examples(t *testing.T) {
	for _, tc := range rfcCases {
		got, err := Expand(tc.tmpl, rfcVars)
		if err != nil || got != tc.want {
			t.Errorf("RFC 6570 %s: %s = %q, %v; want %q", tc.section, tc.tmpl, got, err, tc.want)
		}
	}
}

// TestEscapingPerPart is what pollwarden relies on: a job id cannot add
// query parameters, path segments or a fragment, and {+} keeps a Google
// operation name's slashes.
func TestEscapingPerPart(t *testing.T) {
	for _, tc := range []struct{ tmpl, job, want string }{
		{"https://p.test/v1/jobs/{job_id}/cancel", "run-q&force=true&all=1", "https://p.test/v1/jobs/run-q%26force%3Dtrue%26all%3D1/cancel"},
		{"https://p.test/v1/cancel?id={job_id}", "run-q&force=true&all=1", "https://p.test/v1/cancel?id=run-q%26force%3Dtrue%26all%3D1"},
		{"https://p.test/v1/cancel{?job_id}", "a b#c", "https://p.test/v1/cancel?job_id=a%20b%23c"},
		{"https://p.test/v1/{job_id}", "../../admin", "https://p.test/v1/..%2F..%2Fadmin"},
		{"https://p.test/v1/{+job_id}", "projects/p/locations/l/operations/o", "https://p.test/v1/projects/p/locations/l/operations/o"},
		{"https://p.test/v1/{job_id}", "é", "https://p.test/v1/%C3%A9"},
		{"https://p.test/ü/{job_id}", "x", "https://p.test/%C3%BC/x"},
	} {
		got, err := Expand(tc.tmpl, map[string]string{"job_id": tc.job})
		if err != nil || got != tc.want {
			t.Errorf("%s with %q = %q, %v; want %q", tc.tmpl, tc.job, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ tmpl, want string }{
		{"https://p.test/{job_id", "unclosed"},
		{"https://p.test/job_id}", "without"},
		{"https://p.test/{}", "invalid variable name"},
		{"https://p.test/{a b}", "invalid variable name"},
		{"https://p.test/{a..b}", "invalid variable name"},
		{"https://p.test/{=x}", "reserved"},
		{"https://p.test/{|x}", "reserved"},
		{"https://p.test/{x:0}", "prefix length"},
		{"https://p.test/{x:10000}", "prefix length"},
		{"https://p.test/{x:}", "prefix length"},
		{"https://p.test/{x,}", "invalid variable name"},
		{"https://p.test/a b", "may not appear"},
		{"https://p.test/%zz", "two hex digits"},
		{"https://p.test/\xff", "invalid UTF-8"},
	} {
		_, err := Parse(tc.tmpl)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want an error with %q", tc.tmpl, err, tc.want)
		}
	}
}

func TestNamesAndExprs(t *testing.T) {
	tp, err := Parse("https://p.test/{a}/{+b,a}{?c}")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tp.Names(), ","); got != "a,b,c" {
		t.Errorf("Names = %s", got)
	}
	ex := tp.Exprs()
	if len(ex) != 3 || ex[1].Op != '+' || tp.String()[ex[1].Start:ex[1].End] != "{+b,a}" {
		t.Errorf("Exprs = %+v", ex)
	}
}
