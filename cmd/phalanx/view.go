package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/view/web"
)

// serveView serves srv on addr in the background and prints its URL to
// stdout. stop ends serving and waits for it.
func serveView(addr string, srv *web.Server, stdout io.Writer) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--ui: %w", err)
	}
	url = "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(stdout, "view: %s\n", url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	return url, func() { cancel(); <-done }, nil
}

// lingerView keeps the page up once the session is over: for linger, or
// with linger 0 until the process is interrupted.
func lingerView(url string, linger time.Duration, stdout io.Writer) {
	fmt.Fprint(stdout, "the session is over; ")
	waitView(url, linger, stdout)
}

// waitView waits for linger, or with linger 0 until the process is
// interrupted, saying so.
func waitView(url string, linger time.Duration, stdout io.Writer) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if linger > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, linger)
		defer cancel()
		fmt.Fprintf(stdout, "the page stays at %s for %v (or until interrupted)\n", url, linger)
	} else {
		fmt.Fprintf(stdout, "the page stays at %s until interrupted (Ctrl-C)\n", url)
	}
	<-ctx.Done()
}

// clickCommand returns the command a click on tile (x, y) gives through
// the member in slot: in the rts game, every unit of the member moves
// there.
func clickCommand(sim string, players, slot, x, y int) ([]byte, string, error) {
	if sim != rts.SimName {
		return nil, "", fmt.Errorf("the %s simulation takes no commands from the map", sim)
	}
	cfg := rts.DefaultConfig()
	cfg.Players = players
	if x < 0 || y < 0 || x >= cfg.MapWidth || y >= cfg.MapHeight {
		return nil, "", fmt.Errorf("tile (%d, %d) is off the %d×%d map", x, y, cfg.MapWidth, cfg.MapHeight)
	}
	c := rts.Command{Kind: rts.Move, Target: rts.Tile{X: x, Y: y}}
	for i := range cfg.UnitsPerPlayer {
		c.Units = append(c.Units, rts.UnitID(slot*cfg.UnitsPerPlayer+i))
	}
	b, err := c.AppendBinary(nil)
	if err != nil {
		return nil, "", err
	}
	return b, fmt.Sprintf("move member %d's units to (%d, %d)", slot, x, y), nil
}

// describeCommand says what a command of the rts game orders.
func describeCommand(payload []byte) string {
	c, err := rts.DecodeCommand(payload)
	if err != nil {
		return fmt.Sprintf("%d bytes (%v)", len(payload), err)
	}
	s := fmt.Sprintf("%s %d unit(s)", c.Kind, len(c.Units))
	switch c.Kind {
	case rts.Move, rts.AttackMove:
		s += fmt.Sprintf(" to (%d, %d)", c.Target.X, c.Target.Y)
	case rts.Attack:
		s += fmt.Sprintf(" on unit %d", c.TargetUnit)
	}
	return s
}
