// Package reckon is dead reckoning for the entities of a Phalanx session that
// cannot be simulated deterministically: a cursor, a camera, a free-flying
// object owned by one member.
//
// The owner of such an entity runs an [Owner] every frame. The Owner keeps
// the prediction its receivers make ("predict yourself") and sends an
// [Update] only when the true position strays more than a threshold from
// it, or when a heartbeat is due; a change is sent again after 100 and 300
// ms (staggered unreliable datagrams), then nothing until the next change.
// Updates are unreliable and sequenced: a [Receiver] drops any update older
// than the newest it has and hands the rest to a [Smoother], which predicts
// the entity forward and converges on each new prediction by one of four
// methods: [Snap], [Linear], [Quadratic] or [Cubic].
//
// Updates cross the network as datagrams of kind 0x02 ([AppendUpdate],
// [ParseUpdate]). [Meter] measures how well a receiver shows an entity, and
// [RunScenario] compares the methods over a simulated network.
//
// Positions, velocities and accelerations are [Vec2] or [Vec3] in float64:
// this is presentation, not simulation, and need not be deterministic. Time
// is a [time.Duration] since an epoch the members share (the session's
// timeline), always passed in: nothing here reads a clock or starts a
// goroutine, and no type is safe for concurrent use.
package reckon
