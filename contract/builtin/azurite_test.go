package builtin_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
	"github.com/pollwarden/pollwarden/contract"
	"github.com/pollwarden/pollwarden/controller"
	"github.com/pollwarden/pollwarden/policy"
	"github.com/pollwarden/pollwarden/prober"
	"github.com/pollwarden/pollwarden/sqlite"
)

// Azurite's well-known development account (documented by Microsoft for
// the emulator; not a secret).
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// startAzurite runs the Azurite blob emulator (npm package azurite) and
// returns its base URL, or skips: POLLWARDEN_TEST_AZURITE names its
// dist/src/blob/main.js, POLLWARDEN_TEST_NODE a Node of version 22 or
// later (default: node on PATH).
func startAzurite(t *testing.T) string {
	t.Helper()
	main := os.Getenv("POLLWARDEN_TEST_AZURITE")
	if main == "" {
		t.Skip("POLLWARDEN_TEST_AZURITE is not set (npm install azurite; point it at node_modules/azurite/dist/src/blob/main.js)")
	}
	node := os.Getenv("POLLWARDEN_TEST_NODE")
	if node == "" {
		node = "node"
	}
	cmd := exec.Command(node, main, "--blobHost", "127.0.0.1", "--blobPort", "0", "--skipApiVersionCheck", "--inMemoryPersistence", "--loose")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listens := regexp.MustCompile(`listens on (http://127\.0\.0\.1:\d+)`)
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if m := listens.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1]
		}
	}
	t.Fatalf("azurite did not start:\n%s", strings.Join(lines, "\n"))
	return ""
}

// azuriteDo sends one request signed with the account's Shared Key, as
// the Azure Storage REST reference ("Authorize with Shared Key") says.
func azuriteDo(t *testing.T, method, base, path string, query url.Values, header map[string]string, body []byte) *http.Response {
	t.Helper()
	u := base + "/" + azuriteAccount + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	req.Header.Set("x-ms-version", "2024-11-04")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	var ms []string
	for k := range req.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			ms = append(ms, lk+":"+req.Header.Get(k))
		}
	}
	sort.Strings(ms)
	length := ""
	if len(body) > 0 {
		length = fmt.Sprint(len(body))
	}
	res := "/" + azuriteAccount + "/" + azuriteAccount + path
	var qk []string
	for k := range query {
		qk = append(qk, k)
	}
	sort.Strings(qk)
	for _, k := range qk {
		res += "\n" + strings.ToLower(k) + ":" + strings.Join(query[k], ",")
	}
	toSign := strings.Join([]string{method, "", "", length, "", req.Header.Get("Content-Type"), "", "", "", "", "", ""}, "\n") +
		"\n" + strings.Join(ms, "\n") + "\n" + res
	key, _ := base64.StdEncoding.DecodeString(azuriteKey)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(toSign))
	req.Header.Set("Authorization", "SharedKey "+azuriteAccount+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp
}

// TestAzuriteBlobCopy waits with the built-in azure-blob-copy on a copy
// the Azurite emulator made: its HEAD answers carry x-ms-copy-status,
// x-ms-copy-id and x-ms-copy-progress as Azure Storage writes them. The
// container is public (read), so the built-in's credential is removed
// (`credential: null`); Azurite takes a Bearer token only over HTTPS.
// Azurite copies within an account at once, so the copy is already
// `success` at the first check.
func TestAzuriteBlobCopy(t *testing.T) {
	base := startAzurite(t)
	if r := azuriteDo(t, "PUT", base, "/cont", url.Values{"restype": {"container"}}, map[string]string{"x-ms-blob-public-access": "blob"}, nil); r.StatusCode != 201 {
		t.Fatalf("create container: %s", r.Status)
	}
	if r := azuriteDo(t, "PUT", base, "/cont/src.bin", nil, map[string]string{"x-ms-blob-type": "BlockBlob"}, []byte("hello, blob")); r.StatusCode != 201 {
		t.Fatalf("upload: %s", r.Status)
	}
	r := azuriteDo(t, "PUT", base, "/cont/backups/dst.bin", nil, map[string]string{"x-ms-copy-source": base + "/" + azuriteAccount + "/cont/src.bin"}, nil)
	if r.StatusCode != 202 || r.Header.Get("x-ms-copy-id") == "" {
		t.Fatalf("copy: %s %v", r.Status, r.Header)
	}
	copyID := r.Header.Get("x-ms-copy-id")

	src := fmt.Sprintf("version: 1\nextends: azure-blob-copy\nname: blob-azurite\nbase_url: %q\nstatus: {credential: null}\n", base+"/"+azuriteAccount)
	c, err := contract.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := contract.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{now: time.Now()}
	ctl := controller.New(controller.Options{Store: st, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2)),
		Prober: prober.New(prober.Options{Now: clock.Now})})
	op, err := ctl.Start(context.Background(), ex, policy.NewParams{ID: "op-azurite", ProviderJobID: "cont/backups/dst.bin"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := ctl.Wait(context.Background(), ex, op.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.Phase != pollwarden.PhaseSucceeded || final.LastState != "success" ||
		!strings.Contains(string(final.Result), copyID) || !strings.Contains(string(final.Result), "11/11") {
		t.Fatalf("final %s/%s state %q result %s, want succeeded on success with copy %s and progress 11/11",
			final.Phase, final.Reason, final.LastState, final.Result, copyID)
	}
}
