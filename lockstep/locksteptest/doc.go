// Package locksteptest runs several lockstep cores over a simulated,
// impaired network in virtual time.
//
// Nothing here reads a clock or opens a socket: the run is one loop over
// the queue of a netsim.Network (the members' uplinks and links, and every
// wake-up, datagram and submission in order of time), and every random
// choice comes from one seed. The same Config gives the same run, byte for byte. The harness is the
// ground truth of a run: it compares every member's bucket and state hash of
// every frame directly, independent of anything the protocol detects.
package locksteptest
