package target

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
)

const schemaPath = "../../docs/profile.schema.json"

// schemaCannotSay are fixtures the parser refuses for a rule that compares
// two values of the profile, which JSON Schema (without $data) cannot
// express; the schema's description states these rules in words.
var schemaCannotSay = map[string]string{
	"bad-tool-duplicate.json":           "two tool roles name the same tool",
	"bad-upstream-tool-differs.json":    "upstream_tool differs from tools.write.name",
	"bad-other-wallet-same-key.json":    "other_wallet.api_key is one of api_keys",
	"bad-other-wallet-same-wallet.json": "other_wallet.wallet_id is wallet_id",
	"bad-key-header-auth.json":          "key_header is auth.header",
	"bad-effects-no-token.json":         "an effects template holds no {token}",
	"bad-effects-read-is-write.json":    "effects.read.tool is tools.write",
	"bad-reason-http-overlap.json":      "two HTTP mappings of different meanings match one answer",
}

func loadSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("decode schema: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema: %v", err)
	}
	return rs
}

// schemaCheck validates a document as a JSON Schema validator would see it:
// one JSON value, nothing after it.
func schemaCheck(rs *jsonschema.Resolved, b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return rs.Validate(doc)
}

// TestSchemaAgreesWithParser: docs/profile.schema.json and ParseProfile
// accept and refuse the same profiles: every file of testdata/ and every
// seed of the fuzz corpus, except the few rules the schema cannot state.
func TestSchemaAgreesWithParser(t *testing.T) {
	rs := loadSchema(t)
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	docs := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(f)] = b
	}
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParseProfile", "*"))
	for _, f := range seeds {
		docs["fuzz/"+filepath.Base(f)] = readSeed(t, f)
	}
	// Edges of the URL and receipt path syntax, which the schema states as
	// patterns.
	for i, extra := range []string{
		`"urls":["http://:80/mcp"]`, `"urls":["HTTP://H/x"]`, `"urls":["http://[::1]:8080/mcp"]`,
		`"urls":["http://h/%zz"]`, `"urls":["http://h:x/"]`, `"urls":["http://u:p@h/mcp?x=1#f"]`,
		`"urls":["ftp://h/"]`, `"urls":["http:/h"]`,
		`"receipt_path":"a['b.c'].d"`, `"receipt_path":"a['b']c"`, `"receipt_path":"['']"`,
		`"receipt_path":"a.['x''].y"`, `"receipt_path":"a['x"`, `"receipt_path":" "`, `"receipt_path":".a"`,
	} {
		docs[fmt.Sprintf("inline-%02d %s", i, extra)] = []byte(`{"control_url":"http://h/c",` + extra + `}`)
	}
	for name := range schemaCannotSay {
		if _, ok := docs[name]; !ok {
			t.Errorf("schemaCannotSay names %s, which is not in testdata", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		b := docs[name]
		_, perr := ParseProfile(b)
		serr := schemaCheck(rs, b)
		if why, ok := schemaCannotSay[name]; ok {
			if perr == nil || serr != nil {
				t.Errorf("%s (%s): want the parser to refuse and the schema to accept; parser: %v; schema: %v", name, why, perr, serr)
			}
			continue
		}
		if (perr == nil) != (serr == nil) {
			t.Errorf("%s: parser and schema disagree:\nparser: %v\nschema: %v", name, perr, serr)
		}
		if strings.HasPrefix(name, "good-") || name == "profile.example.json" {
			if perr != nil {
				t.Errorf("%s: refused: %v", name, perr)
			}
		}
		if strings.HasPrefix(name, "bad-") && perr == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// readSeed decodes one file of the fuzz corpus ("go test fuzz v1" and one
// []byte literal).
func readSeed(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
		t.Fatalf("%s: not a one-value fuzz seed", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}

// TestSchemaNamesMatchGo: the schema's lists of reasons and capabilities
// are the parser's, so neither can gain a name alone.
func TestSchemaNamesMatchGo(t *testing.T) {
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Reasons struct {
				PropertyNames struct{ Enum []string } `json:"propertyNames"`
			}
			Capabilities struct {
				Items struct{ Enum []string }
			}
		}
		AllOf []struct {
			Then struct {
				Properties struct {
					Capabilities struct {
						Items struct {
							Not struct{ Enum []string }
						}
					}
				}
			}
		} `json:"allOf"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(KnownReasons, s.Properties.Reasons.PropertyNames.Enum); diff != "" {
		t.Errorf("reasons (-Go +schema):\n%s", diff)
	}
	if diff := cmp.Diff(KnownCapabilities, s.Properties.Capabilities.Items.Enum); diff != "" {
		t.Errorf("capabilities (-Go +schema):\n%s", diff)
	}
	var controlOnly []string
	for _, a := range s.AllOf {
		controlOnly = append(controlOnly, a.Then.Properties.Capabilities.Items.Not.Enum...)
	}
	if diff := cmp.Diff(controlCaps, controlOnly); diff != "" {
		t.Errorf("capabilities that need a control_url (-Go +schema):\n%s", diff)
	}
}

// TestSchemaDescribesEveryProperty: a vendor reading the schema finds what
// each member means at the member itself.
func TestSchemaDescribesEveryProperty(t *testing.T) {
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	n := 0
	var walk func(at string, s map[string]any)
	walk = func(at string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for name, v := range props {
			p, _ := v.(map[string]any)
			n++
			if d, _ := p["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s%s: no description", at, name)
			}
			walk(at+name+".", p)
			if ref, _ := p["$ref"].(string); strings.HasPrefix(ref, "#/$defs/") {
				d, _ := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
				walk(at+name+".", d)
			}
			if ap, ok := p["additionalProperties"].(map[string]any); ok {
				walk(at+name+".*.", ap)
			}
		}
	}
	walk("", root)
	if n == 0 {
		t.Fatal("no properties found; the schema's shape changed under this test")
	}
}

// TestSchemaHasEveryMember: the schema's properties are exactly the JSON
// members of the Go types, nested ones included.
func TestSchemaHasEveryMember(t *testing.T) {
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	var compare func(at string, s map[string]any, typ reflect.Type)
	compare = func(at string, s map[string]any, typ reflect.Type) {
		if ref, _ := s["$ref"].(string); strings.HasPrefix(ref, "#/$defs/") {
			s, _ = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		props, _ := s["properties"].(map[string]any)
		var goNames []string
		for f := range fields(typ) {
			name := jsonName(f)
			goNames = append(goNames, name)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			p, ok := props[name].(map[string]any)
			if !ok {
				continue // reported below
			}
			if ft.Kind() == reflect.Struct {
				compare(at+name+".", p, ft)
			}
		}
		if diff := cmp.Diff(slices.Sorted(slices.Values(goNames)), slices.Sorted(maps.Keys(props))); diff != "" {
			t.Errorf("%s members (-Go +schema):\n%s", strings.TrimSuffix(at, ".")+"{}", diff)
		}
	}
	compare("", root, reflect.TypeFor[Profile]())

}

// TestGuideExample: the complete example of docs/profile.md is a valid
// profile for the parser and for the schema.
func TestGuideExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/profile.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("## A complete example"))
	_, rest, ok2 := bytes.Cut(rest, []byte("```json\n"))
	example, _, ok3 := bytes.Cut(rest, []byte("```"))
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/profile.md has no json block under \"## A complete example\"")
	}
	p, err := ParseProfile(example)
	if err != nil {
		t.Fatalf("the guide's example: %v", err)
	}
	if err := schemaCheck(loadSchema(t), example); err != nil {
		t.Fatalf("the guide's example against the schema: %v", err)
	}
	if p.ControlURL != "" || !p.Has("upstream") || !p.Has(CapPrincipalTokens) || p.Credentials.OtherWallet == nil {
		t.Fatalf("the guide's example no longer shows a gateway without a control API using tools, keys and identities: %+v", p)
	}
}
