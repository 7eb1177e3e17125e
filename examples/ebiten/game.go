package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"
	"github.com/hajimehoshi/ebiten/v2/inpututil"
	"github.com/hajimehoshi/ebiten/v2/vector"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/peer"
)

var squadColors = []color.RGBA{{0x1b, 0x9e, 0x77, 0xff}, {0xd9, 0x5f, 0x02, 0xff}, {0x75, 0x70, 0xb3, 0xff}, {0xe7, 0x29, 0x8a, 0xff}}

// game is the Ebitengine side: input, stepping, drawing.
type game struct {
	m       *peer.Member
	players int
	script  bool
	shot    string

	w         *world // nil until the lobby has agreed on the seed
	self      int
	prev, cur []determinism.Vec2 // unit positions before and after the newest frame
	stepped   bucket.Frame
	clicked   bucket.Frame // the newest frame the script clicked at
	canvas    *ebiten.Image
	saved     bool
}

func newGame(m *peer.Member, players int, script bool, shot string) *game {
	return &game{m: m, players: players, script: script, shot: shot, stepped: -1, clicked: -1,
		canvas: ebiten.NewImage(fieldW, fieldH)}
}

func (g *game) Update() error {
	switch g.m.Phase() {
	case peer.PhaseLobby:
		return nil
	case peer.PhaseFailed:
		return g.m.Status().Err
	case peer.PhaseEnded:
		if g.saved || g.shot == "" || !g.m.Status().Completed {
			return ebiten.Termination
		}
	}
	if g.w == nil {
		s := g.m.Agreement()
		g.w, g.self = newWorld(s.Seed.Uint64(), g.players), int(s.Self)
		g.cur = g.w.positions(nil)
	}
	for _, b := range g.m.Ready() {
		g.prev = append(g.prev[:0], g.cur...)
		g.w.Step(b.Frame, b.Commands)
		g.cur = g.w.positions(g.cur[:0])
		g.m.Stepped(b.Frame, g.w.Hash(), nil)
		g.stepped = b.Frame
	}
	if x, y, ok := g.click(); ok {
		_ = g.m.Submit(order(x, y)) // refused only once the match is over
	}
	return nil
}

// click returns where the player clicked on the field this tick, if it did:
// the mouse, or with --script a click every 30 frames near the flag.
func (g *game) click() (int, int, bool) {
	if g.script {
		if g.stepped < 0 || g.stepped/30 == g.clicked/30 {
			return 0, 0, false
		}
		g.clicked = g.stepped
		off := 10 * (g.self%2*2 - 1)
		return int(g.w.flag.X.Int()) + off, int(g.w.flag.Y.Int()) - off, true
	}
	if !inpututil.IsMouseButtonJustPressed(ebiten.MouseButtonLeft) {
		return 0, 0, false
	}
	x, y := ebiten.CursorPosition()
	return x, y, true
}

func (g *game) Draw(screen *ebiten.Image) {
	c := g.canvas
	c.Fill(color.RGBA{0x20, 0x24, 0x28, 0xff})
	if g.w == nil {
		ebitenutil.DebugPrint(c, g.m.Status().String())
		screen.DrawImage(c, nil)
		return
	}
	// Positions drawn between the last two frames, by the frame clock.
	a := g.m.Alpha()
	for i, p := range g.cur {
		q := p
		if i < len(g.prev) {
			q = g.prev[i]
		}
		x := float32(q.X.Float64() + (p.X.Float64()-q.X.Float64())*a)
		y := float32(q.Y.Float64() + (p.Y.Float64()-q.Y.Float64())*a)
		vector.DrawFilledRect(c, x-3, y-3, 6, 6, squadColors[i/squad], false)
	}
	vector.DrawFilledCircle(c, float32(g.w.flag.X.Float64()), float32(g.w.flag.Y.Float64()), 4, color.White, true)
	ebitenutil.DebugPrint(c, fmt.Sprintf("player %d  frame %d  score %v", g.self, g.stepped, g.w.score))
	screen.DrawImage(c, nil)
	if g.shot != "" && !g.saved && g.m.Status().Completed {
		g.saved = true
		if err := savePNG(c, g.shot); err != nil {
			fmt.Fprintln(os.Stderr, "ebiten: screenshot:", err)
		}
	}
}

func (g *game) Layout(int, int) (int, int) { return fieldW, fieldH }

// savePNG writes img to path.
func savePNG(img *ebiten.Image, path string) error {
	b := img.Bounds()
	pix := make([]byte, 4*b.Dx()*b.Dy())
	img.ReadPixels(pix)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, &image.RGBA{Pix: pix, Stride: 4 * b.Dx(), Rect: b}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
