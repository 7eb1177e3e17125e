// Package view shows a running session, or replays of one, in a browser.
//
// It has three parts:
//
//   - The feed: plain structs a member already has, put in a neutral form a
//     page can draw (Snapshot, Member, Peer, Event, Command), and the
//     optional Drawable interface of a simulation, which describes its
//     state as a Scene of units on a tile map. MemberOf and EventOf build
//     them from a lockstep.SessionStats and a lockstep.Event.
//   - Server: an HTTP handler that serves one embedded page (nothing is
//     loaded from outside) and pushes the newest Snapshot to every open
//     page over Server-Sent Events. Publish never blocks: a page that reads
//     slowly only sees fewer snapshots, never slows the caller. A click on
//     the map is handed to Config.Command.
//   - Replays: the plain data the page shows of replays (ReplaysInfo,
//     ReplayFrame) and the Replays interface the Server asks; package
//     view/replayview implements it over replay files.
//
// The package starts no goroutine of its own but those of net/http while
// Serve runs; Serve returns once its context ends and every page is
// closed.
package view
