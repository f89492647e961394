package costtest

import (
	"bytes"
	"strings"
	"testing"
)

// The checker must see what it is for: a quadratic function fails it, a linear one passes.
func TestLinearSeesQuadratic(t *testing.T) {
	linear := Shape{
		Name: "linear",
		Make: func(n int) []byte { return bytes.Repeat([]byte("a"), n) },
		Run: func(in []byte) {
			_ = strings.ToUpper(string(in))
		},
	}
	Linear(t, 20000, linear)

	quadratic := Shape{
		Name: "quadratic",
		Make: func(n int) []byte { return bytes.Repeat([]byte("a"), n) },
		Run: func(in []byte) {
			// Builds every prefix's path the way an eager field path does.
			path := ""
			for i := 0; i < len(in); i++ {
				path = path + string(in[i])
			}
			_ = path
		},
		PerByte: 1 << 30, // only the growth is checked here
	}
	if problems, _ := Check(quadratic, 4000); len(problems) == 0 {
		t.Fatal("a quadratic function passed the linear check")
	}
}
