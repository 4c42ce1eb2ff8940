// Package features embeds the Gherkin scenarios so the mcpconform binary
// carries its suite wherever it runs.
package features

import "embed"

// FS holds every *.feature file of this folder.
//
//go:embed *.feature
var FS embed.FS
