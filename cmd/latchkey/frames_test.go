package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// --frames-addr knows whether it was given, wherever from: --dev serves the frames at
// devFramesAddr unless it was, and "" (from any source) still means none.
func TestFramesAddrGiven(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		env, file string
		want      optionalString
	}{
		{"not given", nil, "", "", optionalString{}},
		{"command line", []string{"--frames-addr", "0.0.0.0:8443"}, "", "", optionalString{"0.0.0.0:8443", true}},
		{"empty on the command line", []string{"--frames-addr", ""}, "", "", optionalString{"", true}},
		{"environment", nil, "127.0.0.1:9443", "", optionalString{"127.0.0.1:9443", true}},
		{"configuration file", nil, "", "frames-addr: \"\"\n", optionalString{"", true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var addr optionalString
			fs.Var(&addr, "frames-addr", "")
			fs.String(configFlag, "", "")
			args := tc.args
			if tc.env != "" {
				t.Setenv("LATCHKEY_FRAMES_ADDR", tc.env)
			}
			if tc.file != "" {
				args = append(args, "--config", writeConfig(t, tc.file))
			}
			if err := parseFlags(fs, args); err != nil {
				t.Fatal(err)
			}
			if addr != tc.want {
				t.Fatalf("%+v, want %+v", addr, tc.want)
			}
		})
	}
}

// serve --dev with --frames-addr serves the frame pages there, says where, and lets any origin
// frame them (development mode, no --frames-ancestors).
func TestServeDevServesTheFrames(t *testing.T) {
	srv := child(t, "serve", "--dev", "--data-dir", t.TempDir(), "--api-addr", "127.0.0.1:0", "--proxy-addr", "",
		"--dashboard-addr", "", "--frames-addr", "127.0.0.1:0", "--log-level", "error")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if strings.Contains(s.Text(), "framesUrl") {
				line <- s.Text()
				return
			}
		}
		close(line)
	}()
	var out struct{ FramesURL string }
	select {
	case l, ok := <-line:
		if !ok || json.Unmarshal([]byte(l), &out) != nil || !strings.HasPrefix(out.FramesURL, "http://127.0.0.1:") {
			t.Fatalf("serve --dev printed no framesUrl: %q", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve --dev printed nothing")
	}
	resp, err := http.Get(out.FramesURL + "/export")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK ||
		!strings.HasSuffix(resp.Header.Get("Content-Security-Policy"), "frame-ancestors *") {
		t.Fatalf("GET /export: %d %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	// Through the admission gate: a body is refused before it is read (the frames take none);
	// without one, the method is.
	for body, want := range map[string]int{"x": http.StatusBadRequest, "": http.StatusMethodNotAllowed} {
		resp, err = http.Post(out.FramesURL+"/export", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST /export with body %q: %d, want %d", body, resp.StatusCode, want)
		}
	}
}
