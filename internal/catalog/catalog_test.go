package catalog

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mcpconform/mcpconform/features"
)

func TestShippedFeaturesFollowTheRules(t *testing.T) {
	es, err := Load(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) < 30 {
		t.Fatalf("catalog has %d scenarios, want at least 30", len(es))
	}
	for _, e := range es {
		if !strings.Contains(e.Source, "review of") && !strings.Contains(e.Source, "issue") && !strings.Contains(e.Source, "MCP") && !strings.Contains(e.Source, "JSON-RPC") && !strings.Contains(e.Source, "IETF") {
			t.Errorf("%s: source %q names no review, issue, spec or draft", e.ID, e.Source)
		}
		// A reader of the repository has only words to look a source up by:
		// a path to a file outside it leads nowhere.
		for _, path := range []string{"seeds/", ".txt", ".json", "../", "shared/"} {
			if strings.Contains(e.Source, path) {
				t.Errorf("%s: source %q names a file (%q), not the finding", e.ID, e.Source, path)
			}
		}
	}
}

func TestLoadRejects(t *testing.T) {
	const ok = "  @x-01 @must\n  Scenario: s\n    Requirement: r\n    Source: seeds/a\n    Given a step\n"
	for _, tc := range []struct{ name, body, want string }{
		{"no id", "Feature: f\n  @must\n  Scenario: s\n    Requirement: r\n    Source: s\n    Given x\n", "no ID tag"},
		{"no level", "Feature: f\n  @x-01\n  Scenario: s\n    Requirement: r\n    Source: s\n    Given x\n", "no level tag"},
		{"no requirement", "Feature: f\n  @x-01 @must\n  Scenario: s\n    Given x\n", "Requirement:"},
		{"duplicate id", "Feature: f\n" + ok + ok, "already used"},
		{"two ids", "Feature: f\n  @x-01 @x-02 @must\n  Scenario: s\n    Requirement: r\n    Source: s\n    Given x\n", "two ID tags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(fstest.MapFS{"a.feature": {Data: []byte(tc.body)}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestOutlineRowsGetTheirOwnIDs(t *testing.T) {
	body := `Feature: f
  @must
  Scenario Outline: on <v>
    Requirement: r
    Source: seeds/x
    Given <v>

    @o-01
    Examples: one
      | v |
      | a |

    @o-02
    Examples: two
      | v |
      | b |

    @o-02-two-urls @needs-two-urls
    Examples: two, crossed with a dimension
      | v |
      | c |
`
	es, err := Load(fstest.MapFS{"a.feature": {Data: []byte(body)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].ID != "o-01" || es[1].ID != "o-02" || es[1].Title != "on b" {
		t.Fatalf("entries = %+v", es)
	}
	// A crossed scenario's ID is its scenario's and the dimension's; a tag
	// naming a need is no ID.
	if e := es[2]; e.ID != "o-02-two-urls" || len(e.Needs) != 1 || e.Needs[0] != "two-urls" {
		t.Fatalf("crossed entry = %+v", e)
	}
}
