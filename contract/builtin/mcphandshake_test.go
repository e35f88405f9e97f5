package builtin_test

import (
	"net/http"
	"strings"
)

// mcpHandshake answers the MCP streamable-HTTP handshake for the fake
// provider, as the TypeScript SDK's server does: an initialize gets the
// session id in Mcp-Session-Id, notifications/initialized a 202. It
// reports whether it answered; every other request must carry the
// session id (counted in sessionless when it does not). f.mu is held.
func (f *fakeProvider) mcpHandshake(w http.ResponseWriter, r *http.Request, body string) bool {
	switch {
	case strings.Contains(body, `"method":"initialize"`):
		f.handshakes++
		w.Header().Set("Mcp-Session-Id", f.session)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",` +
			`"capabilities":{"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"fake","version":"1"}}}`))
		return true
	case r.Header.Get("Mcp-Session-Id") != f.session:
		f.sessionless++
		return false
	case strings.Contains(body, `"method":"notifications/initialized"`):
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	return false
}
