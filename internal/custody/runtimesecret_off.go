//go:build !goexperiment.runtimesecret

package custody

// inSecret runs f. Built with GOEXPERIMENT=runtimesecret it runs f under runtime/secret
// (runtimesecret.go); without the experiment, only the explicit wiping in this package applies.
func inSecret(f func()) { f() }
