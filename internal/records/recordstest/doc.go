// Package recordstest supports tests that must cover every record kind Latchkey declares (the
// migration to PostgreSQL copies each; deleting a sub-organization removes each it owns): it
// finds the kinds in the sources, so a new kind is covered without editing those tests. Tests
// only: nothing in the server imports it.
package recordstest
