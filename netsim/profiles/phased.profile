# Conditions that change during a session: two minutes of broadband, two of
# a bad link (congested Wi-Fi or a weak mobile link), two of broadband again,
# then the schedule repeats. Each phase has the settings of the built-in
# profile of that name (docs/profiles.md). A scheduling policy that stays
# sized for the bad minutes pays for them in the good ones; one sized for the
# good minutes stalls in the bad ones.
name phased
2m latency=15ms jitter=3ms loss=0.1% reorder=0.01%/2ms bw=1250000 queue=50ms
2m latency=60ms jitter=40ms loss=2% burst=4%/25%/0%/80% reorder=2%/30ms dup=1% bw=250000 queue=200ms
2m latency=15ms jitter=3ms loss=0.1% reorder=0.01%/2ms bw=1250000 queue=50ms
