package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxNameLen bounds the readable part of a file name, far below the 255
// bytes most file systems allow, leaving room for the hash, a counter,
// the extension and the temporary-file decoration of writeAtomic.
const maxNameLen = 64

// fileNames gives every scenario a file base name (no extension) that is
// safe on any file system for any ID, in scenario order:
//   - only [A-Za-z0-9._-], never starting with '.', never empty, at most
//     maxNameLen bytes before the suffixes, never a Windows device name
//     (CON, nul.txt, COM1: "_" goes in front);
//   - an ID that had to be changed to get there gets "~" and 8 hex digits of
//     the SHA-256 of the ID, so "a/b" and "a_b" do not collide;
//   - names are unique even on case-insensitive file systems: a later
//     scenario whose name is taken (a duplicate ID, "Retry-01" after
//     "retry-01") gets "~2", "~3", ... A SafeName never ends that way (a
//     safe ID has no "~", a changed one ends in "~" and 8 hex digits), so
//     this never takes the name of another scenario's SafeName.
//
// An ID that is already safe is its own name: evidence/retry-01.json.
func fileNames(ss []Scenario) []string {
	names := make([]string, len(ss))
	taken := make(map[string]bool, len(ss))
	for i, s := range ss {
		base := SafeName(s.ID)
		name := base
		for n := 2; taken[strings.ToLower(name)]; n++ {
			name = base + "~" + strconv.Itoa(n)
		}
		taken[strings.ToLower(name)] = true
		names[i] = name
	}
	return names
}

// SafeName is the file base name (no extension) of the scenario id:
// evidence/<SafeName(id)>.json and history/<SafeName(id)>.ndjson. It is id
// itself when id is already safe, and otherwise follows the rules of
// fileNames. The one exception is a run with two IDs that differ only in
// case (or a duplicate ID): the later one gets a "~N" suffix, and
// summary.json, which lists every scenario's paths, is the authority.
func SafeName(id string) string {
	var b strings.Builder
	changed := false
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c == '.' && b.Len() > 0:
			b.WriteByte(c)
		default:
			// Any other byte, including every byte of a multi-byte rune, and
			// a leading dot (hidden files, "." and "..").
			b.WriteByte('_')
			changed = true
		}
	}
	name := b.String()
	if len(name) > maxNameLen {
		name, changed = name[:maxNameLen], true
	}
	// Windows strips trailing dots and spaces (spaces are already gone).
	if trimmed := strings.TrimRight(name, "."); trimmed != name {
		name, changed = trimmed, true
	}
	if name == "" {
		name, changed = "scenario", true
	}
	if isWindowsDevice(name) {
		name, changed = "_"+name, true
	}
	if changed {
		sum := sha256.Sum256([]byte(id))
		name += "~" + hex.EncodeToString(sum[:4])
	}
	return name
}

// isWindowsDevice reports whether name, up to its first dot, is a reserved
// device name (CON, NUL, COM1, ...), which Windows refuses as a file name
// whatever the extension.
func isWindowsDevice(name string) bool {
	stem, _, _ := strings.Cut(name, ".")
	switch strings.ToUpper(stem) {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(stem) == 4 {
		u := strings.ToUpper(stem)
		if (strings.HasPrefix(u, "COM") || strings.HasPrefix(u, "LPT")) && u[3] >= '0' && u[3] <= '9' {
			return true
		}
	}
	return false
}
