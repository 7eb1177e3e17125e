package netsim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPPMString(t *testing.T) {
	tests := []struct {
		p    PPM
		want string
	}{
		{0, "0%"},
		{1, "0.0001%"},
		{10, "0.001%"},
		{5_000, "0.5%"},
		{20_000, "2%"},
		{123_456, "12.3456%"},
		{300_000, "30%"},
		{Always, "100%"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("PPM(%d).String() = %q, want %q", tt.p, got, tt.want)
		}
		back, err := ParsePPM(tt.want)
		if err != nil || back != tt.p {
			t.Errorf("ParsePPM(%q) = %d, %v; want %d", tt.want, back, err, tt.p)
		}
	}
}

func TestPPMRoundTripAll(t *testing.T) {
	for p := PPM(0); p <= Always; p += 997 {
		back, err := ParsePPM(p.String())
		if err != nil || back != p {
			t.Fatalf("ParsePPM(%q) = %d, %v; want %d", p.String(), back, err, p)
		}
	}
}

func TestParsePPM(t *testing.T) {
	tests := []struct {
		in      string
		want    PPM
		problem string // substring of the error, "" for success
	}{
		{"2%", 20_000, ""},
		{"02.50%", 25_000, ""},
		{"0.0001%", 1, ""},
		{"100%", Always, ""},
		{"100.0000%", Always, ""},
		{"2", 0, "missing %"},
		{"%", 0, "not a percentage"},
		{"-1%", 0, "not a percentage"},
		{"+1%", 0, "not a percentage"},
		{"1.%", 0, "not a percentage"},
		{".5%", 0, "not a percentage"},
		{"1e2%", 0, "not a percentage"},
		{"1.2.3%", 0, "not a percentage"},
		{"0.00001%", 0, "more than 4 decimal places"},
		{"100.0001%", 0, "above 100%"},
		{"1000%", 0, "above 100%"},
		{"99999999999999999999%", 0, "above 100%"},
	}
	for _, tt := range tests {
		got, err := ParsePPM(tt.in)
		if tt.problem == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParsePPM(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("ParsePPM(%q) error = %v, want one wrapping ErrInvalidProfile containing %q", tt.in, err, tt.problem)
		}
	}
}

func TestBurstRate(t *testing.T) {
	tests := []struct {
		b    Burst
		want PPM
	}{
		{Burst{}, 0},
		{Burst{LossGood: 10_000}, 10_000},
		{Burst{Enter: 40_000, Leave: 250_000, LossBad: 800_000}, 110_344},
		{Burst{Enter: 10_000, Leave: 300_000, LossGood: 0, LossBad: 500_000}, 16_129},
		{Burst{Enter: Always, Leave: 0, LossBad: Always}, Always},
	}
	for _, tt := range tests {
		if got := tt.b.Rate(); got != tt.want {
			t.Errorf("%+v.Rate() = %d, want %d", tt.b, got, tt.want)
		}
	}
}

func TestConditionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       Conditions
		problem string
	}{
		{"zero", Conditions{}, ""},
		{"full", Conditions{Latency: time.Hour, Jitter: 1, Loss: Always, Reorder: 1, ReorderDelay: 1, Bandwidth: 1, Queue: time.Hour}, ""},
		{"negative latency", Conditions{Latency: -1}, "latency -1ns is negative"},
		{"long jitter", Conditions{Jitter: MaxDelay + 1}, "jitter 1h0m0.000000001s is above"},
		{"negative reorder delay", Conditions{ReorderDelay: -time.Second}, "reorder delay"},
		{"negative queue", Conditions{Queue: -1, Bandwidth: 1}, "queue -1ns is negative"},
		{"loss", Conditions{Loss: Always + 1}, "loss 1000001 ppm is above 100%"},
		{"enter", Conditions{Burst: Burst{Enter: Always + 1}}, "burst good→bad"},
		{"leave", Conditions{Burst: Burst{Leave: Always + 1}}, "burst bad→good"},
		{"loss good", Conditions{Burst: Burst{LossGood: Always + 1}}, "burst loss in good"},
		{"loss bad", Conditions{Burst: Burst{LossBad: Always + 1}}, "burst loss in bad"},
		{"reorder", Conditions{Reorder: Always + 1, ReorderDelay: 1}, "reorder 1000001 ppm"},
		{"dup", Conditions{Duplicate: Always + 1}, "dup"},
		{"reorder without delay", Conditions{Reorder: 1}, "needs a positive delay"},
		{"negative bandwidth", Conditions{Bandwidth: -1}, "bandwidth -1 is negative"},
		{"queue without bandwidth", Conditions{Queue: time.Millisecond}, "without a bandwidth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), tt.problem) {
				t.Fatalf("Validate() = %v, want ErrInvalidProfile containing %q", err, tt.problem)
			}
		})
	}
}
