package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
)

// procLine is one line a member process printed.
type procLine struct {
	p   *meshProc
	msg memberMsg
}

// startProc starts member process index with args; its reader sends its
// lines to m.feed.
func (m *meshRun) startProc(ctx context.Context, exe string, index int, args []string) (*meshProc, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = &prefixWriter{w: m.stderr, prefix: fmt.Sprintf("[member %d] ", index)}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a member: %w", err)
	}
	p := &meshProc{index: index, cmd: cmd, stdin: stdin, slot: -1}
	m.procs = append(m.procs, p)
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var msg memberMsg
			if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
				fmt.Fprintf(m.stderr, "[member %d] %s\n", p.index, sc.Text())
				continue
			}
			m.feed <- procLine{p, msg}
		}
	}()
	return p, nil
}

// abort kills the member processes started so far and waits for them.
func (m *meshRun) abort() {
	m.stopAll()
	for _, p := range m.procs {
		_ = p.cmd.Wait()
		p.stdin.Close()
	}
}

func (m *meshRun) stopAll() {
	for _, p := range m.procs {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	}
}
