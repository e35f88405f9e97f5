package contract

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pollwarden/pollwarden"
)

// withCredential is base with status.credential (and any further status
// keys) given as indented YAML under status.
func withCredential(status string) string {
	return strings.Replace(base, "  url: https://api.example.com/jobs/{job_id}\n",
		"  url: https://api.example.com/jobs/{job_id}\n"+status, 1)
}

func TestCredentialKinds(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want pollwarden.Credential
	}{
		{"oauth2", `  credential:
    kind: oauth2_client_credentials
    token_url: https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token
    client_id: env:AZURE_CLIENT_ID
    client_secret: file:/run/secrets/azure
    scopes: [https://cognitiveservices.azure.com/.default]
`, pollwarden.Credential{Kind: pollwarden.CredentialOAuth2, Header: "Authorization", Scheme: "Bearer", Ref: "file:/run/secrets/azure",
			ClientID: "env:AZURE_CLIENT_ID", TokenURL: "https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token",
			Scopes: []string{"https://cognitiveservices.azure.com/.default"}}},
		{"google", `  credential:
    kind: google_service_account
    key: file:/etc/gcp/key.json
    scopes: [https://www.googleapis.com/auth/cloud-platform]
`, pollwarden.Credential{Kind: pollwarden.CredentialGoogle, Header: "Authorization", Scheme: "Bearer", Ref: "file:/etc/gcp/key.json",
			TokenURL: GoogleTokenURL, Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}},
		{"sigv4", `  credential:
    kind: aws_sigv4
    region: us-east-1
    service: textract
    access_key_id: env:AWS_ACCESS_KEY_ID
    secret_access_key: env:AWS_SECRET_ACCESS_KEY
    session_token: env:AWS_SESSION_TOKEN
`, pollwarden.Credential{Kind: pollwarden.CredentialSigV4, Region: "us-east-1", Service: "textract", AccessKeyID: "env:AWS_ACCESS_KEY_ID",
			Ref: "env:AWS_SECRET_ACCESS_KEY", SessionToken: "env:AWS_SESSION_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(withCredential(tt.yaml)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*c.Status.Credential, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *c.Status.Credential, tt.want)
			}
		})
	}
}

func TestCredentialKindsBad(t *testing.T) {
	oauth := "  credential:\n    kind: oauth2_client_credentials\n    client_id: env:ID\n    client_secret: env:SECRET\n"
	tests := []struct{ name, yaml, path, contains string }{
		{"unknown kind", "  credential: {kind: kerberos, secret: env:X}\n", "status.credential.kind", "unknown credential kind"},
		{"token url missing", oauth, "status.credential.token_url", "missing"},
		{"token url from a variable", oauth + "    token_url: https://{tenant}.example.com/token\n", "status.credential.token_url", "no variables"},
		{"plain http token url", oauth + "    token_url: http://login.example.com/token\n", "status.credential.token_url", "unencrypted"},
		{"token url with user info", oauth + "    token_url: https://u:p@login.example.com/token\n", "status.credential.token_url", "user credentials"},
		{"literal client secret", strings.Replace(oauth, "env:SECRET", "hunter2hunter2", 1) + "    token_url: https://l.example.com/t\n",
			"status.credential.client_secret", "value not shown"},
		{"header key on sigv4", "  credential: {kind: aws_sigv4, region: us-east-1, service: textract, access_key_id: env:A, secret_access_key: env:B, header: X-Key}\n",
			"status.credential.header", "does not apply"},
		{"secret on oauth2", oauth + "    token_url: https://l.example.com/t\n    secret: env:S\n", "status.credential.secret", "does not apply"},
		{"bad region", "  credential: {kind: aws_sigv4, region: US East, service: textract, access_key_id: env:A, secret_access_key: env:B}\n",
			"status.credential.region", "AWS region name"},
		{"google without scopes", "  credential: {kind: google_service_account, key: file:/k.json}\n", "status.credential", "needs scopes"},
		{"ca not a file ref", "  ca_file: /etc/ca.pem\n", "status.ca_file", "file:PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := problems(t, withCredential(tt.yaml))
			for _, p := range ps {
				if p.Path == tt.path && strings.Contains(p.Msg, tt.contains) {
					if strings.Contains(p.Msg, "hunter2") {
						t.Errorf("secret echoed: %s", p.Msg)
					}
					return
				}
			}
			t.Errorf("no problem at %s containing %q in %v", tt.path, tt.contains, ps)
		})
	}
}

func TestCAFileParsed(t *testing.T) {
	for _, key := range []string{"ca_file", "ca"} {
		c, err := Parse([]byte(withCredential("  " + key + ": file:/etc/cluster/ca.crt\n")))
		if err != nil {
			t.Fatal(err)
		}
		if c.Status.CAFile != "file:/etc/cluster/ca.crt" {
			t.Errorf("%s: CAFile %q", key, c.Status.CAFile)
		}
	}
}

// TestApproveEachCallRefusesUnapprovedCalls: a credential marked
// approve_each_call cannot also be sent by a submission or a result
// fetch, which no approval covers; each refusal names the section and its
// line.
func TestApproveEachCallRefusesUnapprovedCalls(t *testing.T) {
	marked := withCredential("  credential: {header: Authorization, secret: env:AUDIT_KEY, approve_each_call: true}\n")
	for _, tc := range []struct{ name, extra, path string }{
		{"submit", "submit: {url: https://api.example.com/jobs, job_id_path: id}\n", "submit"},
		{"result fetch", "result:\n  require: [{path: out, kind: string}]\n  fetch: {url: \"https://api.example.com/files/{out}\", max_bytes: 9}\n", "result.fetch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, marked+tc.extra)
			line := strings.Count(marked, "\n") + 1 + strings.Count(tc.extra[:strings.Index(tc.extra, strings.TrimPrefix(tc.path, "result."))], "\n")
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, "approve_each_call") && p.Line == line {
					return
				}
			}
			t.Fatalf("no approve_each_call problem at %s line %d: %+v", tc.path, line, ps)
		})
		// Unmarked, the same contract parses.
		if _, err := Parse([]byte(withCredential("  credential: {header: Authorization, secret: env:AUDIT_KEY}\n") + tc.extra)); err != nil {
			t.Fatalf("%s without the mark: %v", tc.name, err)
		}
	}
}

// approve_each_call applies to every kind of credential, is a boolean,
// and is what makes every status call wait for an approver.
func TestCredentialApproveEachCall(t *testing.T) {
	c, err := Parse([]byte(withCredential("  credential: {header: Authorization, secret: env:AUDIT_KEY, approve_each_call: true}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Status.Credential.ApproveEachCall || !c.Status.EachCallNeedsApproval() {
		t.Fatalf("credential %+v: want every call to need approval", *c.Status.Credential)
	}
	if !strings.Contains(Summary(c), "credential env:AUDIT_KEY: every status call waits for an approver") {
		t.Errorf("contract check does not say it:\n%s", Summary(c))
	}
	plain, err := Parse([]byte(withCredential("  credential: {header: Authorization, secret: env:AUDIT_KEY}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Status.EachCallNeedsApproval() {
		t.Fatal("a plain GET credential needs approval")
	}
	_, err = Parse([]byte(withCredential("  credential: {header: Authorization, secret: env:AUDIT_KEY, approve_each_call: always}\n")))
	if err == nil || !strings.Contains(err.Error(), "status.credential.approve_each_call") || !strings.Contains(err.Error(), "true or false") {
		t.Fatalf("approve_each_call: always: err %v, want a problem naming the key", err)
	}
}
