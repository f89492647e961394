// Package costtest checks, in tests, that a piece of code's cost is bounded by its input's size:
// a parser of untrusted bytes, or a path that expands stored data, must not spend time or memory
// that grows faster than linearly in what it was given (docs/limits.md).
//
// Linear runs the code on an adversarial input of size n and of size 4n and fails when the bytes
// it allocates or the time it takes grow by more than a linear factor (with slack for constant
// costs and noise), or when the bytes allocated exceed a fixed multiple of the input. Time is the
// process's CPU time (so other processes do not count), compared only as a ratio of two runs in
// the same process, never against a clock budget, and a time ratio over the bound is measured
// again before it fails, so a loaded machine does not make a linear function look quadratic.
//
// Budget is the one-shot form for fuzz targets: the bytes one call allocates, against a multiple
// of its input.
//
// Neither may run beside other tests in the same process (runtime.MemStats is process-wide):
// cost tests do not call t.Parallel.
package costtest
