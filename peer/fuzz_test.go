package peer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// FuzzLobbyMessage feeds arbitrary bytes to the lobby message decoder: it
// must never panic, must refuse oversized lengths, and what it accepts must
// survive a round trip.
func FuzzLobbyMessage(f *testing.F) {
	frame := func(body string) []byte {
		return append(binary.AppendUvarint(nil, uint64(len(body))), body...)
	}
	p := testParams(3)
	for _, m := range []lobbyMsg{
		{Type: msgHello, Params: &p, Members: []string{"12D3KooWA"}, Commit: make([]byte, 32), Datagram: "127.0.0.1:1"},
		{Type: msgRefuse, Reason: refuseNoSession},
		{Type: msgReveal, Contribution: []byte{1, 2, 3}, Transcript: []byte{4}},
		{Type: msgReady, SeedCheck: []byte{5}},
		{Type: msgStart, StartUnixNano: 1_700_000_000_000_000_000},
		{Type: msgAbort, Detail: "why"},
	} {
		body, _ := json.Marshal(&m)
		f.Add(frame(string(body)))
	}
	f.Add(frame("{"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		c := &lobbyConn{r: bufio.NewReader(bytes.NewReader(data))}
		var m lobbyMsg
		err := c.read(&m)
		if n, k := binary.Uvarint(data); k > 0 && n > maxLobbyMessage && !errors.Is(err, ErrLobbyProtocol) {
			t.Fatalf("length %d accepted: %v", n, err)
		}
		if err != nil {
			return
		}
		var out bytes.Buffer
		body, err := json.Marshal(&m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		out.Write(binary.AppendUvarint(nil, uint64(len(body))))
		out.Write(body)
		var back lobbyMsg
		if err := (&lobbyConn{r: bufio.NewReader(&out)}).read(&back); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(m), normalize(back)) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, back)
		}
	})
}

// normalize makes empty and nil byte slices alike, as JSON does.
func normalize(m lobbyMsg) lobbyMsg {
	for _, b := range []*[]byte{&m.Commit, &m.Contribution, &m.Transcript, &m.SeedCheck} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	if len(m.Members) == 0 {
		m.Members = nil
	}
	return m
}

// fuzzIDs returns n peer IDs from fixed Ed25519 keys, sorted.
func fuzzIDs(t testing.TB, n int) []peer.ID {
	ids := make([]peer.ID, n)
	for i := range ids {
		_, pub, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{byte(i + 1)}, 32)))
		if err != nil {
			t.Fatal(err)
		}
		if ids[i], err = peer.IDFromPublicKey(pub); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(ids)
	return ids
}

// FuzzLobbyHello feeds a lobby, after framing, arbitrary hello bodies from
// one of its members: the checks must never panic, and a hello they accept
// agrees with ours on every parameter and member and names a datagram
// address.
func FuzzLobbyHello(f *testing.F) {
	ids := fuzzIDs(f, 3)
	params := testParams(3).withDefaults()
	l := &lobbyMachine{cfg: lobbyConfig{params: params, self: ids[0], members: ids}}
	good := lobbyMsg{Type: msgHello, Params: &params, Members: idStrings(ids), Commit: make([]byte, 32), Datagram: "127.0.0.1:4000"}
	for _, m := range []lobbyMsg{
		good,
		{Type: msgHello, Params: &params, Members: idStrings(ids[:2]), Commit: make([]byte, 32), Datagram: "[::]:1"},
		{Type: msgHello, Members: []string{"not an ID"}},
	} {
		body, _ := json.Marshal(&m)
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m lobbyMsg
		if json.Unmarshal(body, &m) != nil {
			return
		}
		ep, err := l.checkHello(&m, ids[1])
		if err != nil {
			for _, s := range []error{ErrLobbyProtocol, ErrVersionMismatch, ErrParamsMismatch, ErrMembersMismatch} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error without a lobby sentinel: %v", err)
		}
		if compareParams(params, *m.Params, ids[1]) != nil || len(m.Commit) != 32 || !ep.IsValid() {
			t.Fatalf("accepted %+v", m)
		}
		got := make([]string, len(m.Members))
		copy(got, m.Members)
		slices.Sort(got)
		want := idStrings(ids)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("accepted members %v", m.Members)
		}
	})
}

// FuzzIdentityFile loads arbitrary identity files: the result is a key
// that survives a round trip through its own file, or an error wrapping
// ErrBadIdentity; never a panic.
func FuzzIdentityFile(f *testing.F) {
	key, _, err := crypto.GenerateEd25519Key(bytes.NewReader(make([]byte, 32)))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := crypto.MarshalPrivateKey(key)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("not a key"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "id.key")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := LoadOrCreateIdentity(path)
		if err != nil {
			if !errors.Is(err, ErrBadIdentity) {
				t.Fatalf("error without ErrBadIdentity: %v", err)
			}
			return
		}
		again, err := crypto.MarshalPrivateKey(k)
		if err != nil {
			t.Fatalf("accepted key does not encode: %v", err)
		}
		back, err := crypto.UnmarshalPrivateKey(again)
		if err != nil || !back.Equals(k) {
			t.Fatalf("accepted key does not round-trip: %v", err)
		}
	})
}
