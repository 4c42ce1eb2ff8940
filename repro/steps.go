package repro

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"

	gherkin "github.com/cucumber/gherkin/go/v42"

	"github.com/mcpconform/mcpconform/catalog"
)

// Steps returns the text of the scenario's steps, background first, as
// godog runs them (the pickle of entry: outline values filled in).
func Steps(fsys fs.FS, e catalog.Entry) ([]string, error) {
	data, err := fs.ReadFile(fsys, e.File)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", e.File, err)
	}
	var n int
	newID := func() string { n++; return fmt.Sprint(n) }
	doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), newID)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", e.File, err)
	}
	doc.Uri = path.Base(e.File)
	for _, p := range gherkin.Pickles(*doc, doc.Uri, newID) {
		var tags []string
		for _, t := range p.Tags {
			tags = append(tags, t.Name)
		}
		if catalog.IDOf(tags) != e.ID {
			continue
		}
		var out []string
		for _, s := range p.Steps {
			out = append(out, s.Text)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: no scenario tagged @%s", e.File, e.ID)
}
