// Package doortest holds the door conformance suite: one table of
// requests replayed through the CLI, the HTTP API and the MCP server,
// each asserting the same acceptance or the same problem, so that a rule
// enforced by one door and forgotten by another shows up as a failing
// row. The package has no code of its own; see its tests.
package doortest
