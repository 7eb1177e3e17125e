package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/view"
	"github.com/phalanx-net/phalanx/view/web"
)

// The view of one member: phalanx peer --ui serves the page itself;
// a member process of phalanx mesh --ui feeds its parent, which serves
// it, with a "view" line every viewEvery.

// viewEvery is how often a member's view is refreshed.
const viewEvery = 250 * time.Millisecond

// sceneEvery is how often the stepping goroutine describes the world.
const sceneEvery = 400 * time.Millisecond

// uiOrder is a command a person gave on the page, queued until the member
// submits it: its number on the page, its payload and what it orders.
type uiOrder struct {
	id      int
	payload []byte
	text    string
	seq     int64 // sequence number once submitted, else -1
	frame   int64 // frame it executed on here, else -1
}

// memberView is the view state of a memberRun; memberRun.mu guards it.
type memberView struct {
	srv     *web.Server // phalanx peer --ui; nil in a mesh member
	scene   bool        // describe the world (the member the page draws)
	buf     view.Scene  // filled on the stepping goroutine
	sceneAt time.Time
	latest  *view.Scene // the newest description, handed over under mu
	seq     int64       // this member's next command sequence number
	orders  []*uiOrder  // every order from the page (at most maxOrders)
	nextID  int
	sentEv  int // events already sent to the parent
	start   time.Time
}

// maxOrders bounds the orders from the page a member keeps.
const maxOrders = 256

// queueOrder queues a command from the page at tile (x, y); id 0 numbers
// it here (phalanx peer), else it is the parent's number.
func (r *memberRun) queueOrder(id, x, y int) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sess == nil || r.g == nil {
		return "", errors.New("the session has not started")
	}
	if len(r.view.orders) >= maxOrders {
		return "", fmt.Errorf("at most %d commands from the page", maxOrders)
	}
	payload, text, err := clickCommand(r.g.name, r.mf.slotCount(), int(r.sess.Self), x, y)
	if err != nil {
		return "", err
	}
	if id == 0 {
		r.view.nextID++
		id = r.view.nextID
	}
	r.view.orders = append(r.view.orders, &uiOrder{id: id, payload: payload, text: text, seq: -1, frame: -1})
	return fmt.Sprintf("#%d through member %d: %s", id, r.sess.Self, text), nil
}

// takeOrders appends the queued orders' payloads to cmds and numbers every
// command of the frame; called from the Input hook with mu held.
func (r *memberRun) takeOrders(cmds [][]byte) [][]byte {
	cmds = slices.Clip(cmds) // the generator's slice stays as it is
	for _, o := range r.view.orders {
		if o.seq < 0 && o.payload != nil {
			cmds = append(cmds, o.payload)
			o.payload = nil
			o.seq = r.view.seq + int64(len(cmds)) - 1
		}
	}
	r.view.seq += int64(len(cmds))
	return cmds
}

// viewStep runs on the stepping goroutine after each frame: it notes where
// the page's orders executed and now and then describes the world.
func (r *memberRun) viewStep(f bucket.Frame, cmds []bucket.Command) {
	v := &r.view
	r.mu.Lock()
	for _, c := range cmds {
		if int(c.Slot) != int(r.sess.Self) {
			continue
		}
		for _, o := range v.orders {
			if o.seq == int64(c.Seq) && o.frame < 0 {
				o.frame = int64(f)
			}
		}
	}
	r.mu.Unlock()
	d, ok := r.sim.(view.Drawable)
	if !v.scene || !ok || time.Since(v.sceneAt) < sceneEvery {
		return
	}
	v.sceneAt = time.Now()
	d.Scene(&v.buf)
	sc := v.buf
	sc.Units = append([]view.Unit(nil), v.buf.Units...)
	sc.Blocked = append([]byte(nil), v.buf.Blocked...)
	r.mu.Lock()
	v.latest = &sc
	r.mu.Unlock()
}

// memberOf returns this member's figures for the page.
func (r *memberRun) memberOf() view.Member {
	st := r.m.Status()
	vm := view.MemberOf(st.Slot, r.m.Phase().String(), st.Stats)
	if st.Err != nil {
		vm.Error = st.Err.Error()
	}
	return vm
}

// orderViews returns the page's view of the orders; with mu held.
func (r *memberRun) orderViews() []view.Command {
	out := []view.Command{}
	for _, o := range r.view.orders {
		c := view.Command{ID: o.id, Slot: int(r.sess.Self), Seq: o.seq, Text: o.text, Frame: o.frame, Executed: []int{}}
		if o.frame >= 0 {
			c.Executed = append(c.Executed, int(r.sess.Self))
		}
		out = append(out, c)
	}
	return out
}

// publishView publishes the member's snapshot (phalanx peer --ui).
func (r *memberRun) publishView(done bool, summary string) {
	vm := r.memberOf()
	evs := []view.Event{}
	for _, e := range r.m.Events() {
		evs = append(evs, view.EventOf(vm.Slot, e))
	}
	r.mu.Lock()
	snap := &view.Snapshot{
		Title: "member " + fmt.Sprint(vm.Slot) + " of session " + r.mf.session, Seconds: time.Since(r.view.start).Seconds(),
		Members: []view.Member{vm}, Events: evs, Scene: r.view.latest, SceneSlot: vm.Slot,
		Commands: []view.Command{}, Done: done, Summary: summary,
	}
	if r.sess != nil {
		snap.Commands = r.orderViews()
	}
	r.mu.Unlock()
	r.view.srv.Publish(snap)
}

// viewLine prints the member's view for phalanx mesh: its figures, its new
// events, the world when it draws it, and its orders' progress.
func (r *memberRun) viewLine() {
	vm := r.memberOf()
	msg := memberMsg{Type: "view", Slot: vm.Slot, View: &vm}
	evs := r.m.Events()
	r.mu.Lock()
	for _, e := range evs[min(r.view.sentEv, len(evs)):] {
		msg.ViewEvents = append(msg.ViewEvents, view.EventOf(vm.Slot, e))
	}
	r.view.sentEv = len(evs)
	msg.Scene, r.view.latest = r.view.latest, nil
	for _, o := range r.view.orders {
		if o.seq >= 0 {
			msg.Orders = append(msg.Orders, [3]int64{int64(o.id), o.seq, o.frame})
		}
	}
	r.mu.Unlock()
	b, _ := json.Marshal(msg)
	fmt.Fprintln(r.stdout, string(b))
}

// readOrders reads the orders phalanx mesh passes on from the page, one
// JSON line each, until its standard input ends.
func (r *memberRun) readOrders(in *bufio.Reader, stderr io.Writer) {
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var o meshOrder
			if json.Unmarshal(line, &o) == nil && o.Type == "order" {
				if _, err := r.queueOrder(o.ID, o.X, o.Y); err != nil {
					fmt.Fprintf(stderr, "order %d from the page: %v\n", o.ID, err)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// meshOrder is a line phalanx mesh writes to the member that takes the
// page's orders.
type meshOrder struct {
	Type string `json:"type"` // "order"
	ID   int    `json:"id"`
	X    int    `json:"x"`
	Y    int    `json:"y"`
}

// viewing reports whether this member feeds a view.
func (r *memberRun) viewing() bool { return r.mf.ui != "" || r.mf.uiFeed }

// startView starts what the view needs before the member starts: for
// phalanx peer --ui the page's server (kept up after the session by
// mf.viewDone), for a mesh member the reader of the page's orders.
func (r *memberRun) startView(stdin *bufio.Reader, stdout, stderr io.Writer) error {
	r.view.start = time.Now()
	r.view.scene = r.mf.ui != "" || r.mf.uiScene
	if r.mf.uiFeed {
		// It ends with the process, when phalanx mesh closes its stdin.
		go r.readOrders(stdin, stderr)
	}
	if r.mf.ui == "" {
		return nil
	}
	srv := web.NewServer(web.Config{
		Title:   "member of session " + r.mf.session,
		Command: func(x, y int) (string, error) { return r.queueOrder(0, x, y) },
	})
	r.view.srv = srv
	url, stop, err := serveView(r.mf.ui, srv, stdout)
	if err != nil {
		return err
	}
	srv.Publish(&view.Snapshot{Title: "waiting for the other members", Members: []view.Member{}, Events: []view.Event{}, Commands: []view.Command{}})
	r.mf.viewDone = func(summary string) {
		if r.m != nil {
			r.publishView(true, summary)
		}
		lingerView(url, r.mf.uiLinger, stdout)
		stop()
	}
	return nil
}

// peerSummary says how a member's session ended, for the page.
func peerSummary(res *memberResult, err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return fmt.Sprintf("member %d stepped to frame %d, final hash %s, %d stalls", res.Slot, res.Stepped, res.FinalHash, res.Stalls)
}
