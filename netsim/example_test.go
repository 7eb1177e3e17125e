package netsim_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

func ExampleNamed() {
	p, err := netsim.Named("modem")
	if err != nil {
		panic(err)
	}
	fmt.Print(p)

	_, err = netsim.Named("dialup")
	fmt.Println(err)
	// Output:
	// name modem
	// 1m0s latency=70ms jitter=10ms loss=0.5% bw=3600 queue=500ms
	// netsim: unknown profile "dialup" (known: lan, broadband, intercontinental, bad, modem)
}

func ExampleParseProfile() {
	p, err := netsim.ParseProfile(strings.NewReader(`
# fine for ten seconds, then an outage of two
name flaky
10s latency=50ms jitter=10ms loss=2%
2s  loss=100%
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name, p.Period(), p.At(11*time.Second).Loss)

	_, err = netsim.ParseProfile(strings.NewReader("10s latency=50ms\n5s loss=2\n"))
	fmt.Println(err)
	// Output:
	// flaky 12s 100%
	// netsim: profile line 2: loss: "2" is not a percentage (missing %)
}

func ExampleLink() {
	p, _ := netsim.ParseProfile(strings.NewReader("1m latency=20ms bw=1000 queue=1s\n"))
	root := rng.New(42, 0)
	uplink := netsim.NewUplink(p)                  // member 0's uplink
	link := netsim.NewLink(p, root.Derive("0->1")) // member 0 to member 1
	for _, now := range []time.Duration{0, 0, 50 * time.Millisecond} {
		depart, ok := uplink.Admit(now, 100) // 100 ms to serialize at 1000 B/s
		if !ok {
			continue
		}
		d := link.Send(depart, 100)
		fmt.Println(now, "->", d.Arrival[:d.Copies])
	}
	// Output:
	// 0s -> [120ms]
	// 0s -> [220ms]
	// 50ms -> [320ms]
}
