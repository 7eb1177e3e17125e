package peer

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// A member that comes back (MemberConfig.Rejoin): a new process with the
// identity of a member the others dropped. It skips the lobby: it asks the
// live members it reaches (MemberConfig.Join) over CatchupProtocol for the
// session they agreed on, opens the datagram channel to the live ones
// (telling them its new address), and runs a core made with
// lockstep.Config.Join, which asks to be admitted. Once the members agreed
// on the admission frame A, it catches its simulation up to A-1 from them
// (catchup.go) while its core already seals frames from A on, so nobody
// waits for it; then it steps the live buckets it held meanwhile, and
// plays.

// Admission is how a member that came back was admitted and caught up.
type Admission struct {
	Frame           bucket.Frame  // the admission frame the members agreed on
	CheckpointFrame bucket.Frame  // the checkpoint it loaded, or -1 (buckets from frame 0)
	Verified        bool          // the checkpoint restored to the state hash its servers reported
	CatchupFrames   int           // frames stepped to catch up, live ones held meanwhile included
	Bytes           int64         // checkpoint and bucket bytes received
	Servers         int           // live members it fetched from
	Transfer        time.Duration // from the admission to the last byte received
	Fetch           time.Duration // of which fetching, once the members had stepped the frame before the admission
	Resimulate      time.Duration // of which restoring the checkpoint and stepping the frames after it
	Catchup         time.Duration // from the admission to the first live frame stepped
}

// Admission reports how a member that came back was admitted, once it has
// caught up; false before, and for a member that did not come back.
func (m *Member) Admission() (Admission, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admission == nil {
		return Admission{}, false
	}
	return *m.admission, true
}

// findSession asks the members at cfg.Join for the session, then the
// other members they count live at the datagram addresses the lobby agreed
// (the libp2p QUIC address shares its port); it returns the session, the
// members that answered, and the slots every one of them counts live.
func (m *Member) findSession(ctx context.Context, f *fetcher) (*Agreement, []peer.ID, uint64, error) {
	h := m.cfg.Host
	type answer struct {
		id  peer.ID
		in  *catchupInfo
		err error
	}
	ask := func(ais []AddrInfo) []answer {
		answers := make([]answer, len(ais))
		var wg sync.WaitGroup
		for i, ai := range ais {
			wg.Go(func() {
				answers[i].id = ai.ID
				if err := h.h.Connect(ctx, ai); err != nil {
					answers[i].err = err
					return
				}
				answers[i].in, answers[i].err = f.info(ctx, ai.ID)
			})
		}
		wg.Wait()
		return answers
	}
	var sess *Agreement
	var servers []peer.ID
	live := ^uint64(0)
	var errs []error
	want := m.cfg.Params.withDefaults()
	take := func(answers []answer) {
		for _, a := range answers {
			if a.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", a.id, a.err))
				continue
			}
			s, err := a.in.agreement(h.ID(), h.DatagramAddr())
			if err == nil && (!sameParams(s.Params, want) || sess != nil && (s.Seed != sess.Seed || s.ID != sess.ID)) {
				err = fmt.Errorf("%w: it runs %+v", ErrParamsMismatch, s.Params)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", a.id, err))
				continue
			}
			if sess == nil {
				sess = s
			}
			servers = append(servers, a.id)
			live &= a.in.Live
		}
	}
	first := ask(m.cfg.Join)
	// A late joiner, an identity no member had, takes the lowest open slot
	// the first member that answered holds free, and asks again claiming
	// it (seats.go).
	for _, a := range first {
		if a.err != nil {
			continue
		}
		if slices.Contains(a.in.Members, h.ID().String()) {
			break // a member that comes back
		}
		if a.in.Free == 0 {
			return nil, nil, 0, fmt.Errorf("%w: member %s has none free for it", ErrNoOpenSlot, a.id)
		}
		f.claim = bits.TrailingZeros64(a.in.Free)
		m.log.Info("peer: taking an open slot", "slot", f.claim)
		first = ask(m.cfg.Join)
		break
	}
	take(first)
	if sess == nil {
		return nil, nil, 0, fmt.Errorf("peer: no live member answered: %w", errors.Join(errs...))
	}
	var more []AddrInfo
	for slot, id := range sess.Members {
		if live&(1<<slot) == 0 || bucket.Slot(slot) == sess.Self || id == "" || slices.Contains(servers, id) {
			continue
		}
		ep := sess.Endpoints[slot]
		proto := "ip4"
		if ep.Addr().Is6() && !ep.Addr().Is4In6() {
			proto = "ip6"
		}
		a, err := ma.NewMultiaddr(fmt.Sprintf("/%s/%s/udp/%d/quic-v1", proto, ep.Addr().Unmap(), ep.Port()))
		if err == nil {
			more = append(more, AddrInfo{ID: id, Addrs: []ma.Multiaddr{a}})
		}
	}
	take(ask(more))
	return sess, servers, live &^ (1 << sess.Self), nil
}

// rejoin plays a session as a member that comes back.
func (m *Member) rejoin(ctx context.Context) error {
	if m.cfg.NewSim == nil {
		return fmt.Errorf("%w: a member that comes back needs NewSim", ErrInvalidMember)
	}
	f := &fetcher{h: m.cfg.Host, session: m.cfg.Params.SessionID, log: m.log, join: true}
	lctx, cancel := context.WithTimeoutCause(ctx, m.cfg.LobbyTimeout, ErrLobbyTimeout)
	sess, servers, live, err := m.findSession(lctx, f)
	cancel()
	if err != nil {
		return err
	}
	m.cfg.Host.remember(sess)
	f.members = len(sess.Members)
	all := uint64(1)<<len(sess.Members) - 1
	if len(sess.Members) == 64 {
		all = ^uint64(0)
	}
	m.gone.Store(all &^ (live | 1<<sess.Self)) // as its servers see it; events update it
	cc, clock := sess.CoreConfig()
	cc.Signer = m.cfg.Host.StatementSigner()
	if cc.Verifier, err = sess.StatementVerifier(); err != nil {
		cc.Signer, cc.Verifier = nil, nil
	}
	if m.cfg.Configure != nil {
		m.cfg.Configure(&cc)
	}
	cc.Logger, cc.Join = m.log, true
	tcfg := m.cfg.Transport
	if tcfg.Logger == nil {
		tcfg.Logger = m.log
	}
	// Once our datagram channel listens, tell the live members where: the
	// ones with the lower peer ID dial us there.
	announce := func() {
		f.endpoint = m.cfg.Host.DatagramAddr().String()
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, id := range servers {
			wg.Go(func() { _, _ = f.info(actx, id) })
		}
		wg.Wait()
	}
	tctx, cancel := context.WithTimeoutCause(ctx, m.cfg.LobbyTimeout, ErrLobbyTimeout)
	tr, err := newTransport(tctx, m.cfg.Host, sess, tcfg, bits.OnesCount64(live), announce)
	cancel()
	if err != nil {
		return err
	}
	defer tr.Close()
	m.drawn = m.cfg.NewSim(sess)
	admitted := make(chan bucket.Frame, 1)
	ls, err := lockstep.NewSession(lockstep.SessionConfig{
		Core: cc, Transport: tr, Clock: clock, Logger: m.log, // pull mode: we step
		OnEvent: func(e lockstep.Event) {
			if (e.Type == lockstep.EventRejoin || e.Type == lockstep.EventJoin) && e.Member == sess.Self {
				select {
				case admitted <- e.Frame:
				default:
				}
			}
			m.onEvent(e)
		},
		OnStatement: m.onStatement(cc.Session),
		OnDatagram:  m.cfg.OnDatagram,
	})
	if err != nil {
		return err
	}
	m.inputFrom.Store(int64(m.end())) // no input before the admission
	m.mu.Lock()
	m.sess, m.tr, m.ls = sess, tr, ls
	m.status.Slot = int(sess.Self)
	m.mu.Unlock()
	m.phase.Store(int32(PhasePlaying))
	m.log.Info("peer: coming back into the session", "slot", sess.Self, "servers", len(servers))

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var runErr, stepErr error
	var stopServe func() // once caught up, it serves others too
	runDone := make(chan struct{})
	stepDone := make(chan struct{})
	go func() {
		runErr = ls.Run(runCtx)
		close(runDone)
	}()
	go func() {
		defer close(stepDone)
		stepErr = m.stepJoined(runCtx, f, ls, tr, servers, admitted, &stopServe)
		if stepErr != nil && runCtx.Err() == nil {
			stopRun()
		}
	}()
	err = m.playOut(ctx, sess, ls, stopRun, runDone, &runErr)
	<-stepDone
	if stopServe != nil {
		stopServe()
	}
	if stepErr != nil && !errors.Is(stepErr, context.Canceled) {
		return stepErr
	}
	return err
}

// stepJoined waits for the admission, catches the simulation up to the
// frame before it, then steps the live buckets until ctx ends.
func (m *Member) stepJoined(ctx context.Context, f *fetcher, ls *lockstep.Session, tr *Transport, servers []peer.ID, admitted <-chan bucket.Frame, stopServe *func()) error {
	var at bucket.Frame
	select {
	case at = <-admitted:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.inputFrom.Store(int64(at))
	begun := time.Now()
	arch := newArchive(m.checkpointEvery())
	adm, err := m.catchUp(ctx, f, servers, at, arch)
	if err != nil {
		return err
	}
	*stopServe = m.serveCatchup(ctx, m.sess, tr, arch)
	adm.Transfer = time.Since(begun) - adm.Resimulate // the stepping ran between the transfer's messages
	frame := m.sess.Frame()
	tick := time.NewTicker(max(frame/4, time.Millisecond))
	defer tick.Stop()
	var sections []lockstep.Section
	first := true
	for {
		bs := ls.Ready()
		for _, b := range bs {
			if b.Frame >= m.end() {
				continue
			}
			m.drawn.Step(b.Frame, b.Commands)
			hash := m.drawn.Hash()
			sections = sections[:0]
			if sh, ok := m.drawn.(lockstep.SectionHasher); ok {
				sections = sh.SectionHashes(sections)
			}
			ls.Stepped(b.Frame, hash, sections)
			if first {
				first = false
				adm.CatchupFrames += len(bs)
				adm.Catchup = time.Since(begun)
				m.mu.Lock()
				m.admission = &adm
				m.mu.Unlock()
				m.log.Info("peer: caught up", "admitted", at, "frames", adm.CatchupFrames, "bytes", adm.Bytes, "took", adm.Catchup)
			}
			m.onStep(b.Frame, b.Commands, m.drawn, hash)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.ended:
			return nil
		case <-tick.C:
		}
	}
}

// catchUp steps the simulation through frame at-1 from what the servers
// hold: from the newest checkpoint before at that two of them vouch for
// (the one, when only one answers), else from frame 0.
func (m *Member) catchUp(ctx context.Context, f *fetcher, servers []peer.ID, at bucket.Frame, arch *archive) (adm Admission, err error) {
	adm = Admission{Frame: at, CheckpointFrame: -1}
	// The members have not stepped the frames up to the admission yet:
	// ask until they have, so that the newest checkpoint before it is
	// known (the buckets up to it are needed anyway).
	var infos []*catchupInfo
	for wait := 0; ; wait++ {
		infos = make([]*catchupInfo, len(servers))
		var wg sync.WaitGroup
		for i, id := range servers {
			wg.Go(func() {
				ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				infos[i], _ = f.info(ictx, id)
			})
		}
		wg.Wait()
		behind := false
		for _, in := range infos {
			behind = behind || in != nil && bucket.Frame(in.Stepped) < at-1
		}
		if !behind || wait >= 100 {
			break
		}
		select {
		case <-ctx.Done():
			return adm, ctx.Err()
		case <-time.After(4 * m.sess.Frame()):
		}
	}
	fetchFrom := time.Now()
	defer func() { adm.Fetch = time.Since(fetchFrom) }()
	var answered []*catchupInfo
	var ids []peer.ID
	for i, in := range infos {
		if in != nil {
			answered, ids = append(answered, in), append(ids, servers[i])
		}
	}
	if len(ids) == 0 {
		return adm, fmt.Errorf("%w: no live member answered", ErrCatchup)
	}
	from := bucket.Frame(0)
	if snap, ok := m.drawn.(lockstep.Snapshotter); ok {
		if cp, holders := vouched(answered, ids, at); holders != nil {
			var data []byte
			data, err = f.checkpoint(ctx, cp, holders[:min(len(holders), MaxCatchupServers)])
			if err != nil {
				return adm, err
			}
			restoreAt := time.Now()
			err = snap.Restore(data)
			adm.Resimulate += time.Since(restoreAt)
			if err != nil {
				return adm, fmt.Errorf("%w: the checkpoint of frame %d does not restore: %v", ErrCatchup, cp.Frame, err)
			}
			if h := m.drawn.Hash(); h != cp.Hash {
				return adm, fmt.Errorf("%w: the checkpoint of frame %d restores to state hash %016x, its servers reported %016x", ErrCatchup, cp.Frame, h, cp.Hash)
			}
			adm.CheckpointFrame, adm.Verified = bucket.Frame(cp.Frame), true
			arch.seed(checkpoint{frame: bucket.Frame(cp.Frame), hash: cp.Hash, data: data})
			from = bucket.Frame(cp.Frame) + 1
		}
	}
	// The members that still hold every bucket from there.
	var holders []peer.ID
	for i, in := range answered {
		if bucket.Frame(in.From) <= from {
			holders = append(holders, ids[i])
		}
	}
	if len(holders) == 0 {
		return adm, fmt.Errorf("%w: no live member holds the buckets from frame %d", ErrCatchup, from)
	}
	holders = holders[:min(len(holders), MaxCatchupServers)]
	adm.Servers = len(holders)
	snap, _ := m.drawn.(lockstep.Snapshotter)
	err = f.buckets(ctx, from, at-1, holders, func(b lockstep.Bucket) error {
		stepAt := time.Now()
		m.drawn.Step(b.Frame, b.Commands)
		adm.Resimulate += time.Since(stepAt)
		// Kept, so that it can serve others once it plays.
		var hash uint64
		if snap != nil && arch.checkpointFrame(b.Frame) {
			hash = m.drawn.Hash()
		}
		arch.keep(b.Frame, b.Commands, hash, snap)
		return nil
	})
	if err != nil {
		return adm, err
	}
	adm.CatchupFrames = int(at - from)
	adm.Bytes = f.bytes.Load()
	return adm, nil
}

// vouched returns the newest checkpoint before frame at whose state hash
// at least two members reported alike (every member that answered, when
// fewer than two did), and the members that hold it; nil holders if none.
func vouched(infos []*catchupInfo, ids []peer.ID, at bucket.Frame) (cpInfo, []peer.ID) {
	need := min(2, len(infos))
	var best cpInfo
	var holders []peer.ID
	for _, in := range infos {
		for _, cp := range in.Checkpoints {
			if bucket.Frame(cp.Frame) >= at || holders != nil && cp.Frame <= best.Frame {
				continue
			}
			var hs []peer.ID
			for j, other := range infos {
				for _, o := range other.Checkpoints {
					if o.Frame == cp.Frame && o.Hash == cp.Hash && o.Size == cp.Size {
						hs = append(hs, ids[j])
						break // a member vouches once, however often it lists it
					}
				}
			}
			if len(hs) >= need {
				best, holders = cp, hs
			}
		}
	}
	return best, holders
}
