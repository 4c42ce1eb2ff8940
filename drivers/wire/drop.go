package wire

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
)

// dropAfterSend writes req on a connection of its own and closes it unread.
// A raw connection is used so the drop is real: an http.Client would read
// (or pool) the connection.
func dropAfterSend(ctx context.Context, req *http.Request, wait func(context.Context) error) error {
	host := req.URL.Host
	if req.URL.Port() == "" {
		if req.URL.Scheme == "https" {
			host = net.JoinHostPort(req.URL.Hostname(), "443")
		} else {
			host = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if req.URL.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: req.URL.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	if wait != nil {
		if err := wait(ctx); err != nil {
			return fmt.Errorf("wait before drop: %w", err)
		}
	}
	return nil
}
