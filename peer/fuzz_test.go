package peer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
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
