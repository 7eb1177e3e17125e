# A link that is fine for ten seconds, then drops everything for two.
10s latency=50ms jitter=10ms loss=2% burst=1%/30%/0%/50% reorder=1%/20ms dup=0.5% bw=3600 queue=200ms

2s  latency=50ms loss=100%   # outage
