package cli

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestLimitListenerHoldsTheNextConnection: with one slot taken, Accept
// waits; closing the served connection lets the next one in; Close ends a
// waiting Accept.
func TestLimitListenerHoldsTheNextConnection(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(inner, 1)
	defer ln.Close()
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		next <- c
	}()
	select {
	case <-next:
		t.Fatal("a second connection was accepted while the only slot was taken")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	first.Close() // a second Close is harmless
	second := <-next
	if second == nil {
		t.Fatal("the waiting Accept failed after a slot was freed")
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		waiting <- err
	}()
	ln.Close()
	if err := <-waiting; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	second.Close()
}
