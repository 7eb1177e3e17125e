name flaky-wifi
1m30s latency=20ms
