package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/view"
	"github.com/phalanx-net/phalanx/view/web"
)

// meshView is the page of phalanx mesh --ui: the parent serves it from
// the members' view lines. meshRun.mu guards it.
type meshView struct {
	m     *meshRun
	srv   *web.Server
	start time.Time
	last  time.Time // newest publish

	members   map[int]view.Member // by process index
	scene     *view.Scene
	sceneSlot int
	events    []view.Event
	orders    []*view.Command
	bySeq     map[[2]int64]*view.Command // slot and sequence number of a submitted order
	// early are executions of commands of the ordering member seen before
	// it said which sequence number an order got (only while one waits).
	early map[[2]int64][]int
}

// maxViewEvents bounds the events the page of phalanx mesh keeps.
const maxViewEvents = 4096

func newMeshView(m *meshRun) *meshView {
	v := &meshView{m: m, start: time.Now(), members: map[int]view.Member{}, bySeq: map[[2]int64]*view.Command{}, early: map[[2]int64][]int{}}
	v.srv = web.NewServer(web.Config{
		Title:   fmt.Sprintf("mesh of %s, %s", plural(m.n, "member"), m.f.profile),
		Command: v.order,
	})
	return v
}

// order passes a click on the map to the member the page draws (process
// 0), which submits the command; from an HTTP handler's goroutine.
func (v *meshView) order(x, y int) (string, error) {
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	if len(v.m.procs) == 0 || v.m.procs[0].slot < 0 {
		return "", errors.New("the session has not started")
	}
	p := v.m.procs[0]
	if p.killed || p.result != nil {
		return "", errors.New("the member has ended")
	}
	if len(v.orders) >= maxOrders {
		return "", fmt.Errorf("at most %d commands from the page", maxOrders)
	}
	_, text, err := clickCommand(v.m.f.sim, v.m.n, p.slot, x, y)
	if err != nil {
		return "", err
	}
	id := len(v.orders) + 1
	b, _ := json.Marshal(meshOrder{Type: "order", ID: id, X: x, Y: y})
	if _, err := fmt.Fprintln(p.stdin, string(b)); err != nil {
		return "", err
	}
	v.orders = append(v.orders, &view.Command{ID: id, Slot: p.slot, Seq: -1, Text: text, Frame: -1, Executed: []int{}})
	return fmt.Sprintf("#%d through member %d: %s", id, p.slot, text), nil
}

// take takes a line of member process p.
func (v *meshView) take(p *meshProc, msg memberMsg) {
	switch msg.Type {
	case "view":
		if msg.View != nil {
			v.members[p.index] = *msg.View
		}
		if msg.Scene != nil {
			v.scene, v.sceneSlot = msg.Scene, msg.Slot
		}
		for _, e := range msg.ViewEvents {
			if len(v.events) < maxViewEvents {
				v.events = append(v.events, e)
			}
		}
		for _, o := range msg.Orders {
			id, seq, frame := int(o[0]), o[1], o[2]
			if id < 1 || id > len(v.orders) {
				continue
			}
			c := v.orders[id-1]
			if c.Seq < 0 {
				c.Seq = seq
				key := [2]int64{int64(c.Slot), seq}
				v.bySeq[key] = c
				for _, slot := range v.early[key] {
					v.executed(c, slot)
				}
			}
			c.Frame = frame
		}
	case "cmds":
		waiting := false
		for _, c := range v.orders {
			waiting = waiting || c.Seq < 0
		}
		for _, e := range msg.Execs {
			key := [2]int64{e[0], e[1]}
			if c, ok := v.bySeq[key]; ok {
				v.executed(c, msg.Slot)
			} else if waiting && len(v.orders) > 0 && e[0] == int64(v.orders[0].Slot) {
				v.early[key] = append(v.early[key], msg.Slot)
			}
		}
		if !waiting {
			clear(v.early)
		}
	}
	if time.Since(v.last) >= web.DefaultInterval {
		v.publish(false, "")
	}
}

func (v *meshView) executed(c *view.Command, slot int) {
	if !slices.Contains(c.Executed, slot) {
		c.Executed = append(c.Executed, slot)
		slices.Sort(c.Executed)
	}
}

// publish publishes the page's snapshot.
func (v *meshView) publish(done bool, summary string) {
	v.last = time.Now()
	snap := &view.Snapshot{
		Title: fmt.Sprintf("mesh of %s, %s", plural(v.m.n, "member"), v.m.f.profile), Seconds: time.Since(v.start).Seconds(),
		Members: []view.Member{}, Events: slices.Clone(v.events), Scene: v.scene, SceneSlot: v.sceneSlot,
		Commands: []view.Command{}, Done: done, Summary: summary,
	}
	if snap.Events == nil {
		snap.Events = []view.Event{}
	}
	for _, p := range v.m.procs {
		vm, ok := v.members[p.index]
		if !ok {
			vm = view.Member{Slot: p.slot, Phase: "lobby", Frame: -1, Executed: -1, Peers: []view.Peer{}}
		}
		switch {
		case p.killed:
			vm.Phase = "killed"
		case p.result != nil && p.result.Error != "":
			vm.Phase, vm.Error = "failed", p.result.Error
		case p.result != nil:
			vm.Phase = "ended"
		}
		snap.Members = append(snap.Members, vm)
	}
	slices.SortFunc(snap.Members, func(a, b view.Member) int { return a.Slot - b.Slot })
	for _, c := range v.orders {
		cc := *c
		cc.Executed = slices.Clone(c.Executed)
		snap.Commands = append(snap.Commands, cc)
	}
	v.srv.Publish(snap)
}

// summary says how the mesh ended, for the page.
func (r *report) summary() string {
	s := fmt.Sprintf("%s, %d frames: ", plural(r.Peers, "member"), r.Frames)
	if r.Identical {
		s += "identical, final hash " + r.FinalHash
	} else {
		s += "NOT identical"
	}
	return s + fmt.Sprintf("; stall rate %.4f, %d desync(s)", r.StallRate, r.Desyncs)
}
