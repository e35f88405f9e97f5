package main

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// provider is the loopback provider every real-daemon part polls: it
// counts the requests it answers and keeps the time of the last, so that
// each part reads its figures from the same handler.
type provider struct {
	addr   string
	served atomic.Int64
	last   atomic.Int64 // UnixNano of the last request answered
	srv    *http.Server
}

// answerRunning keeps every job going; answerSucceeded ends it, with a
// result URL named after the request's path.
const (
	answerRunning   = `{"state":"running"}`
	answerSucceeded = `{"state":"succeeded","result":{"url":"https://results.example.com%s"}}`
)

// startProvider serves answer (a format taking the request's path when it
// has a verb, else the body as is) on a free loopback port.
func startProvider(answer string) (*provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &provider{addr: ln.Addr().String()}
	withPath := answer == answerSucceeded
	p.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p.served.Add(1)
		p.last.Store(time.Now().UnixNano())
		rw.Header().Set("Content-Type", "application/json")
		if withPath {
			fmt.Fprintf(rw, answer, r.URL.Path)
			return
		}
		rw.Write([]byte(answer))
	})}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *provider) close() { p.srv.Close() }
