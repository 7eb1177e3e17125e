10s latency=1ms
