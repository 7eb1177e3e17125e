package peer

import (
	"errors"
	"log/slog"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Errors of a Member.
var (
	// ErrNotPlaying is returned by Member.Submit and Member.Broadcast
	// before the lobby has ended and after the session has.
	ErrNotPlaying = errors.New("peer: the member is not playing")
	// ErrInvalidMember is returned by Start for an invalid MemberConfig.
	ErrInvalidMember = errors.New("peer: invalid member configuration")
	// ErrLobbyTimeout is the error of a member whose others did not all
	// come to the lobby within MemberConfig.LobbyTimeout.
	ErrLobbyTimeout = errors.New("peer: the other members did not all come to the lobby in time")
)

// DefaultLobbyTimeout is how long a member waits in the lobby for the
// others when MemberConfig.LobbyTimeout is 0.
const DefaultLobbyTimeout = 2 * time.Minute

// leaveTimeout bounds how long a member that ends waits for the others to
// acknowledge its leave.
const leaveTimeout = 5 * time.Second

// MemberConfig configures a Member: everything a game gives to meet the
// other members of a session and play it.
type MemberConfig struct {
	// Host is the member's libp2p host (see NewHost). The member uses it
	// and leaves it open: close it once the member is done.
	Host *Host
	// Params are the session's parameters, the same on every member. With
	// Params.Frames set the session ends after frame Frames-1: every member
	// steps frames 0 to Frames-1, no more, reports the hash after the last
	// as its final hash, and leaves. Without, it plays until Close.
	Params SessionParams
	// Join are the other members' addresses (see ParseAddrs). With MDNS
	// set they are found on the local network instead.
	Join []AddrInfo
	MDNS bool
	// Meet, when set, finds the others through a relay's lobby directory
	// instead, and connects to them directly, by hole punching or through
	// the relay (see Meet; the Host needs HostConfig.NAT). Paths then says
	// which.
	Meet *MeetConfig
	// LobbyTimeout bounds the wait for the others in the lobby (default
	// DefaultLobbyTimeout).
	LobbyTimeout time.Duration

	// NewSim builds the simulation once the lobby has agreed on the
	// session (the shared seed and this member's slot are in s); the
	// member then steps it on its own goroutine. Nil selects pull mode:
	// the game takes the ready buckets with Member.Ready, steps them on its
	// own goroutine and reports each with Member.Stepped.
	NewSim func(s *Agreement) lockstep.Simulation
	// Input, when set, is called from the member's goroutine once for each
	// frame as the frame clock reaches it, and every payload it returns is
	// submitted: the input hook of a member that runs on its own. A game
	// loop calls Submit instead.
	Input func(frame bucket.Frame) [][]byte
	// Configure, when set, changes the core's configuration before the
	// session starts: the policy, timeouts and limits (see lockstep.Config).
	// The fields agreed in the lobby must stay as they are.
	Configure func(*lockstep.Config)
	// Transport configures the datagram channel.
	Transport TransportConfig
	// Record, when set, records this member's replay (see Recording).
	Record *Recording
	// DesyncReports is the directory where the member writes a report when
	// it finds a desync (see desyncreport.go); empty: Record.Dir, beside
	// its replay, or none without a recording. With a report directory and
	// a NewSim simulation that is a lockstep.Snapshotter, the member keeps
	// its recent states, and each report holds both sides' states around
	// the divergence (desyncstates.go).
	DesyncReports string

	// OnStep, when set, is called after each frame is stepped, with its
	// commands and the state hash (in pull mode, from Stepped's caller).
	OnStep func(frame bucket.Frame, commands []bucket.Command, hash uint64)
	// OnEvent, when set, is called with every event of the session (drops,
	// leaves, desyncs), from the member's goroutine.
	OnEvent func(lockstep.Event)
	// OnDatagram, when set, receives the game's own datagrams (see
	// lockstep.SessionConfig.OnDatagram), from the member's goroutine.
	OnDatagram func(from bucket.Slot, data []byte)
	// Logger receives the member's diagnostics; nil discards them.
	Logger *slog.Logger

	// Rejoin makes a member that comes back into a running session with
	// the identity (Host key) of a member the others dropped: it skips the
	// lobby, asks the live members at Join (one or more) for the session,
	// is admitted at a frame they agree on, catches up from them and plays
	// (see rejoin.go and Member.Admission). It needs NewSim; Record is
	// ignored. A host whose identity no member had joins late the same
	// way, into an open slot (Params.Slots, Params.Allowed; seats.go), or
	// fails with ErrNoOpenSlot; its Params must be the session's.
	Rejoin bool
	// CheckpointEvery is how often, in frames, the member saves its
	// simulation for members that come back, when NewSim's simulation is
	// a lockstep.Snapshotter (default DefaultCheckpointEvery; negative:
	// never, they step every bucket from frame 0).
	CheckpointEvery int
	// CatchupRate bounds the bytes per second the member sends each
	// member that catches up from it (default DefaultCatchupRate).
	CatchupRate int
	// Spectators is how many spectators (peers that are no members, see
	// Watch) the member serves at once over the catch-up protocol; 0
	// refuses them. A member that serves spectators lets any peer hold a
	// libp2p connection with its host (the lobby and the datagram channel
	// still refuse strangers).
	Spectators int
}
