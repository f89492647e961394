// Package hottest opens stores for the tests of the packages that read records through package
// hot's caches: a SQLite store in the test's directory behind hot.Wrap, watched as a server
// watches it.
package hottest
