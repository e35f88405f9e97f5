package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/chromedp"
)

// installChromium is what a machine without the browser needs; .ci/run
// runs it.
const installChromium = "apt-get update && apt-get install -y chromium"

// browser starts Debian's Chromium headless with a fresh profile and
// returns a context for a first tab. Without chromium the test skips, or
// fails under CI=true with the command that installs it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed; the console's browser tests need it: %s", installChromium)
		}
		t.Skipf("chromium is not installed (%s)", installChromium)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// tab opens a tab in a browser context of its own (its own cookies), as a
// second person's browser would be.
func tab(t *testing.T, browserCtx context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// act runs actions in the tab, failing the test after a generous bound
// (every query waits for its element, so a missing one ends here).
func act(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(step, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// click clicks the element sel selects. A live update may replace the
// element between finding it and clicking it; then it is found again.
func click(t *testing.T, ctx context.Context, what string, opts ...chromedp.QueryOption) {
	t.Helper()
	var err error
	for range 5 {
		step, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = chromedp.Do(step, chromedp.Click("", append(opts, chromedp.NodeVisible)...))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// axNode is one element as the accessibility tree sees it.
type axNode struct {
	role, name string
	backend    cdp.BackendNodeID
}

// axTree reads the page's accessibility tree (Chromium's computed roles
// and names, what a screen reader gets), leaving out ignored nodes.
func axTree(ctx context.Context, t *chromedp.Target, root cdp.NodeID, role string) ([]axNode, error) {
	res, err := cdp.Call(ctx, t, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{NodeID: root, Role: role})
	if err != nil {
		return nil, err
	}
	var out []axNode
	for _, n := range res.Nodes {
		if n.Ignored || n.BackendDOMNodeID == 0 {
			continue
		}
		out = append(out, axNode{role: axString(n.Role), name: axString(n.Name), backend: n.BackendDOMNodeID})
	}
	return out, nil
}

func axString(v *accessibility.Value) string {
	if v == nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(v.Value, &s)
	return s
}

// byRole selects elements by accessible role and a test of the
// accessible name, through the accessibility tree: no CSS class or id.
func byRole(role string, name func(string) bool) chromedp.QueryOption {
	return chromedp.ByFunc(func(ctx context.Context, t *chromedp.Target, n *chromedp.Node) ([]cdp.NodeID, error) {
		nodes, err := axTree(ctx, t, n.NodeID, role)
		if err != nil {
			return nil, err
		}
		var backend []cdp.BackendNodeID
		for _, ax := range nodes {
			if name(ax.name) {
				backend = append(backend, ax.backend)
			}
		}
		if len(backend) == 0 {
			return nil, nil
		}
		res, err := cdp.Call(ctx, t, dom.PushNodesByBackendIDsToFrontend, dom.PushNodesByBackendIDsToFrontendParams{BackendNodeIDs: backend})
		return res.NodeIDs, err
	})
}

func named(want string) func(string) bool { return func(s string) bool { return s == want } }
func startsWith(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}
func containsAll(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

// roleNames lists the accessible names of every element with role on the
// page now.
func roleNames(t *testing.T, ctx context.Context, role string) []string {
	t.Helper()
	names, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]string, error) {
		doc, err := cdp.Call(ctx, tg, dom.GetDocument, dom.GetDocumentParams{})
		if err != nil {
			return nil, err
		}
		nodes, err := axTree(ctx, tg, doc.Root.NodeID, role)
		var out []string
		for _, n := range nodes {
			out = append(out, n.name)
		}
		return out, err
	})
	if err != nil {
		t.Fatalf("read the %s roles: %v", role, err)
	}
	return names
}

// signIn fills the sign-in form by its accessible names.
func signIn(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	act(t, ctx, "sign in",
		chromedp.Navigate(base+"/"),
		chromedp.SendKeys("", token, byRole("textbox", named("Token")), chromedp.NodeVisible),
		chromedp.Click("", byRole("button", named("Sign in")), chromedp.NodeVisible),
		chromedp.WaitVisible("", byRole("button", named("Sign out"))),
	)
}

// text is the page's visible text.
func text(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitText waits until the page's visible text contains want.
func waitText(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	var page string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
		if err == nil && strings.Contains(s, want) {
			return
		}
		page = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the page never showed %q:\n%s", want, page)
}
