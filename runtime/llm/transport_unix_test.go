//go:build unix

package llm

import (
	"net"
	"syscall"
	"testing"
)

func TestLoopbackConnectionsHaveNoKeepAliveProbes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	dt := newDirect(t)
	c, err := dt.dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var on int
	var serr error
	raw.Control(func(fd uintptr) { on, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE) })
	if serr != nil {
		t.Fatal(serr)
	}
	if on != 0 {
		t.Errorf("SO_KEEPALIVE = %d on a loopback connection, want 0", on)
	}
}
