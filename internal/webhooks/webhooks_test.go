package webhooks

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {5, 16 * time.Second}, {11, 10 * time.Minute}, {20, 10 * time.Minute}} {
		if got := backoff(tc.attempts); got != tc.want {
			t.Errorf("backoff(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url      string
		loopback bool
		ok       bool
	}{
		{"https://hooks.example.com/x", false, true},
		{"http://hooks.example.com/x", true, false},
		{"http://127.0.0.1:8000/h", true, true},
		{"http://127.0.0.1:8000/h", false, false},
		{"ftp://x", true, false},
		{"not a url", false, false},
	} {
		if err := checkURL("parameters.url", tc.url, tc.loopback); (err == nil) != tc.ok {
			t.Errorf("checkURL(%q, %v) = %v", tc.url, tc.loopback, err)
		}
	}
}
