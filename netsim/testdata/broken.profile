10s latency=1ms
5s loss=200%
