package peer

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// mdnsNetnsEnv marks the test process that runs inside a private network
// namespace.
const mdnsNetnsEnv = "PHALANX_MDNS_NETNS"

// TestDiscoverMDNS runs three hosts that find each other by multicast DNS.
// mDNS multicasts on every interface, so the test never runs in the
// machine's own network namespace: it re-executes itself under unshare(1)
// in a new network namespace that holds only a loopback interface (with
// multicast switched on), and skips where that cannot be done.
func TestDiscoverMDNS(t *testing.T) {
	if os.Getenv(mdnsNetnsEnv) != "1" {
		runInPrivateNetns(t, "TestDiscoverMDNS")
		return
	}
	// Inside: make sure nothing but loopback is reachable.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagLoopback == 0 {
			t.Fatalf("interface %s is not loopback: refusing to multicast", ifi.Name)
		}
	}

	hosts := newHosts(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	found, errs := eachAtOnce(len(hosts), func(i int) ([]string, error) {
		infos, err := DiscoverMDNS(ctx, hosts[i], "_phalanx-test._udp", 2)
		var ids []string
		for _, ai := range infos {
			ids = append(ids, ai.ID.String())
		}
		return ids, err
	})
	for i, h := range hosts {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i, errs[i])
		}
		for j, o := range hosts {
			if i != j && !strings.Contains(strings.Join(found[i], " "), o.ID().String()) {
				t.Errorf("member %d (%s) did not find %s: %v", i, h.ID(), o.ID(), found[i])
			}
		}
	}

	// The discovered addresses are good enough to join on.
	sessions := mustJoin(t, hosts)
	if sessions[0].Seed != sessions[2].Seed {
		t.Fatal("members disagree")
	}

	// Wanting more than there are ends with ErrNotEnoughPeers.
	short, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if _, err := DiscoverMDNS(short, hosts[0], "_phalanx-test._udp", 5); !errors.Is(err, ErrNotEnoughPeers) {
		t.Fatalf("DiscoverMDNS(want 5) = %v, want ErrNotEnoughPeers", err)
	}
}

// runInPrivateNetns re-runs test in a child process inside a new network
// namespace with only loopback up, or skips when unshare(1) or ip(8) is
// missing or namespaces are not permitted here.
func runInPrivateNetns(t *testing.T, test string) {
	if testing.Short() {
		t.Skip("needs a private network namespace; skipped in -short mode")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1): cannot make a private network namespace for mDNS")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8): cannot set up loopback in a private network namespace")
	}
	args := []string{"--net"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	script := `ip link set lo up && ip link set lo multicast on && exec "$0" -test.run='^` + test + `$' -test.v -test.timeout=60s`
	args = append(args, "sh", "-c", script, os.Args[0])
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), mdnsNetnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- PASS: "+test) && err == nil {
		t.Logf("passed in a private network namespace:\n%s", out)
		return
	}
	if !strings.Contains(string(out), "=== RUN") { // the namespace itself failed
		t.Skipf("cannot make a private network namespace: %v\n%s", err, out)
	}
	t.Fatalf("%s in a private network namespace: %v\n%s", test, err, out)
}
