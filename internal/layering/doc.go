// Package layering holds the module's import graph to the package table of
// docs/architecture.md: its test fails when a package is missing from the
// table, when a row's imports differ from the package's, or when a package
// (or its tests) imports one listed below it. It has no API.
package layering
