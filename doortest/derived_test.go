package doortest

import "testing"

// TestDerivedIDsAgree: a create without an id through the CLI and through
// the stdio MCP server (both local, whose authority is the store file)
// derive one id, so either resumes what the other started; the API's
// agent, a token, resumes its own, not theirs.
func TestDerivedIDsAgree(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	byCLI := cliDoor{}.do(t, r, ok("ok"))
	byMCP := mcpDoor{}.do(t, r, ok("ok"))
	if byCLI.class != accepted || byMCP.class != accepted {
		t.Fatalf("cli %s %s; mcp %s %s", byCLI.class, byCLI.text, byMCP.class, byMCP.text)
	}
	if byCLI.id != byMCP.id {
		t.Errorf("cli derived %q, mcp %q: the same local request must resume one operation", byCLI.id, byMCP.id)
	}
	byAPI := httpDoor{}.do(t, r, ok("ok"))
	again := httpDoor{}.do(t, r, ok("ok"))
	if byAPI.class != accepted || byAPI.id == byCLI.id || again.id != byAPI.id {
		t.Errorf("api %s %q then %q (local %q): want one operation of the token's own", byAPI.class, byAPI.id, again.id, byCLI.id)
	}
}
