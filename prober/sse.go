package prober

import (
	"bytes"
	"encoding/json"
	"mime"
)

// isEventStream reports a text/event-stream answer: an MCP server on
// streamable HTTP may answer a POST that way (the TypeScript SDK does by
// default) when the request accepts it.
func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// eventStreamJSON returns the JSON-RPC response an event stream carries:
// the data of its first event that is a JSON object with a result or an
// error (notifications and requests before it are skipped), else the
// last event's data, else the stream itself, which then fails to parse as
// JSON with the usual problem.
func eventStreamJSON(raw []byte) []byte {
	var last []byte
	for _, data := range sseEvents(raw) {
		last = data
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if _, ok := m["result"]; ok {
			return data
		}
		if _, ok := m["error"]; ok {
			return data
		}
	}
	if last != nil {
		return last
	}
	return raw
}

// sseEvents splits an event stream into the data of each event (the
// data: lines of one event joined by newlines), per the HTML event-stream
// format: events end at a blank line, one space after the colon is
// dropped, other fields and comments are ignored.
func sseEvents(raw []byte) [][]byte {
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	var out [][]byte
	var data []byte
	have := false
	flush := func() {
		if have {
			out = append(out, data)
		}
		data, have = nil, false
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if len(line) == 0 {
			flush()
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		if have {
			data = append(data, '\n')
		}
		data, have = append(data, v...), true
	}
	flush()
	return out
}
