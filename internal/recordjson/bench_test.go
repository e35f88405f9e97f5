package recordjson

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/pollwarden/pollwarden"
)

// typical is a waiting operation as a daemon saves it at each step: the
// contract's digest and limits, a few variables, times with nanoseconds.
func typical() *pollwarden.Operation {
	at := time.Date(2026, 12, 2, 7, 30, 1, 123456789, time.UTC)
	digest := map[string]string{}
	for _, k := range []string{"status", "state", "result", "hints", "not_found", "backoff", "limits",
		"escalation.extension", "escalation.console_url", "cancel"} {
		digest[k] = "3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046dea"
	}
	return &pollwarden.Operation{ID: "op-0123456789abcdef", Contract: "export", ProviderJobID: "job-42",
		StatusURL: "https://provider.example/v1/jobs/job-42?view=full&x=1", CredentialName: "env:EXPORT_API_TOKEN",
		Fingerprint: "9a0c2b7f5e1d4c3b2a190817263544536271808f9e8d7c6b5a4938271605f4e3", Owner: "agent-1",
		Vars: map[string]string{"region": "eu-west-1", "job": "job-42"}, ExpectedTerminal: []string{"done", "failed"},
		StartedAt: at, DeadlineAt: at.Add(time.Hour), MaxStatusRequests: 100, MaxTransportFailures: 5, MaxRateLimited: 10,
		StatusRequestsUsed: 3, CompletedPolls: 3, NextPollAt: at.Add(7 * time.Second), NextPollSource: pollwarden.DelayLocalBackoff,
		JitterFactor: 0.7312345, Phase: pollwarden.PhaseWaiting, LastState: "running", LastHTTP: 200, LastHTTPAt: &at,
		LastRequestID: "req-9f8e7d", ContractDigest: digest,
		ContractLimits:      &pollwarden.ContractLimits{Deadline: time.Hour, MaxStatusRequests: 100, MaxTransportFailures: 5, MaxRateLimited: 10},
		ContractFingerprint: "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00", Version: 4}
}

func BenchmarkEncode(b *testing.B) {
	op := typical()
	b.Run("json.Marshal", func(b *testing.B) {
		cpuLoop(b, func() {
			rec, _ := json.Marshal(op)
			_ = string(rec)
		})
	})
	b.Run("AppendOperation", func(b *testing.B) {
		cpuLoop(b, func() {
			var buf [2048]byte
			rec, _ := AppendOperation(buf[:0], op)
			_ = string(rec)
		})
	})
}

func BenchmarkDecode(b *testing.B) {
	raw, _ := json.Marshal(typical())
	rec := string(raw)
	b.Run("json.Unmarshal", func(b *testing.B) {
		cpuLoop(b, func() {
			op := new(pollwarden.Operation)
			if err := json.Unmarshal([]byte(rec), op); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("DecodeOperation", func(b *testing.B) {
		cpuLoop(b, func() {
			op := new(pollwarden.Operation)
			if err := DecodeOperation(rec, op); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// cpuLoop runs f b.N times and reports the process's CPU time per run
// (cpu-ns/op) next to ns/op: on the shared machine wall time per run
// varies with the load, CPU time much less.
func cpuLoop(b *testing.B, f func()) {
	b.ReportAllocs()
	start := processCPU(b)
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(processCPU(b)-start)/float64(n), "cpu-ns/op")
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
