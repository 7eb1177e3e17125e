// Package view is what a page shows of a session or of replays, as plain
// data, and the optional interface a simulation implements to be drawn:
//
//   - The feed: plain structs a member already has, put in a neutral form a
//     page can draw (Snapshot, Member, Peer, Event, Command). MemberOf and
//     EventOf build them from a lockstep.SessionStats and a
//     lockstep.Event.
//   - Drawable, an optional interface of a lockstep.Simulation that
//     describes its state as a Scene of units on a tile map.
//   - Replays: what the page shows of replays (ReplaysInfo, ReplayFrame,
//     DesyncReport) and the Replays interface that answers it; package
//     view/replayview implements it over replay files.
//
// Package view/web serves the page. This package imports nothing but the
// lockstep engine, so that a simulation can implement Drawable without
// depending on a web server.
package view
