package audit

import (
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

func TestResultFetchStoryLines(t *testing.T) {
	at := time.Date(2025, 4, 18, 10, 20, 31, 0, time.UTC)
	who := &pollwarden.Actor{Name: "build-agent", Role: pollwarden.RoleAgent}
	for _, tc := range []struct {
		e    pollwarden.Event
		want string
	}{
		{pollwarden.Event{At: at, Kind: pollwarden.EventResultFetchStarted, Data: pollwarden.EventData{Actor: who, URL: "https://api.example.com/files/f1/content"}},
			"2025-04-18 10:20:31 UTC result fetch started by build-agent (agent) from https://api.example.com/files/f1/content"},
		{pollwarden.Event{At: at, Kind: pollwarden.EventResultFetchStarted, Data: pollwarden.EventData{Actor: who, URL: "https://api.example.com/f", Detail: "result fetch 2 of 3"}},
			"2025-04-18 10:20:31 UTC result fetch started by build-agent (agent) from https://api.example.com/f (result fetch 2 of 3)"},
		{pollwarden.Event{At: at, Kind: pollwarden.EventResultFetchRefused, Data: pollwarden.EventData{Actor: who, Detail: "all 3 sent"}},
			"2025-04-18 10:20:31 UTC result fetch refused, nothing sent, asked by build-agent (agent): all 3 sent"},
		{pollwarden.Event{At: at, Kind: pollwarden.EventResultFetched, Data: pollwarden.EventData{Actor: who, Bytes: 42, SHA256: "ab12"}},
			"2025-04-18 10:20:31 UTC result fetched: 42 bytes, sha256 ab12, by build-agent (agent)"},
		{pollwarden.Event{At: at, Kind: pollwarden.EventResultFetchFailed, Data: pollwarden.EventData{Actor: who, HTTPStatus: 200, Detail: "the result passed the contract's max_bytes 64; stopped, not a whole result"}},
			"2025-04-18 10:20:31 UTC result fetch failed: the result passed the contract's max_bytes 64; stopped, not a whole result (HTTP 200), by build-agent (agent)"},
	} {
		if got := StoryLine(tc.e, nil); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
