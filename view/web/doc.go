// Package web serves the view of package view in a browser: one page
// embedded in the binary (nothing is loaded from outside), fed with the
// newest view.Snapshot over Server-Sent Events, or answering questions
// about replays (view.Replays).
//
// Server.Publish never blocks: it swaps a pointer. Each open page is fed
// by its own HTTP handler, at most one snapshot per Config.Interval, always
// the newest; a page that reads slowly only sees fewer snapshots and never
// slows the caller. A click on the map is handed to Config.Command.
//
// The package starts no goroutine of its own but those of net/http while
// Serve runs; Serve returns once its context ends and every page is
// closed.
package web
