package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/mcpconform/mcpconform/internal/judge"
)

// ResultValue is what a history keeps of a result: a digest of what a
// replay must return whole (content, structuredContent and isError, never
// the resultType or _meta a protocol version adds), its resultType, whether
// it lacks the content list, whether it is an input-required round, and the
// token whose probe answer it carries. The zero value for anything else.
func (a *Answer) ResultValue() judge.CallValue {
	var v judge.CallValue
	if a == nil || a.Response == nil || a.Response.Error != nil || len(a.Response.Result) == 0 {
		return v
	}
	h := sha256.New()
	for _, field := range []string{"content", "structuredContent", "isError"} {
		h.Write([]byte(field))
		h.Write([]byte{0})
		h.Write([]byte(a.ResultMember(field)))
		h.Write([]byte{0})
	}
	v.Digest = hex.EncodeToString(h.Sum(nil))[:16]
	v.IsError = a.ResultMember("isError") == "true"
	_ = json.Unmarshal(a.resultField("resultType"), &v.ResultType)
	v.InputRequired = v.ResultType == "input_required"
	var content []json.RawMessage
	v.NoContent = !v.InputRequired && json.Unmarshal(a.resultField("content"), &content) != nil
	var sc struct {
		Token string `json:"token"`
		N     int    `json:"n"`
		Seq   int    `json:"seq"`
	}
	_ = json.Unmarshal(a.resultField("structuredContent"), &sc)
	if sc.N > 0 && sc.Seq > 0 {
		// The probe's answer counts the dispatch it answers: arguments
		// echoed back ({"token": ...}) are no answer of the tool's.
		v.Served = sc.Token
	}
	v.Replayed, v.Charged = a.ReceiptFacts()
	// A marker the profile names replaces the receipt's replayed member:
	// present or absent, it says which results are replays, so the model
	// requires it on every replay and forbids it on every first call.
	if marked, ok := a.ReplayMarked(); ok {
		v.Replayed = &marked
	}
	return v
}

// ResultMember is a result's member as a replay must return it, canonical,
// with what the schema says an absent member means: isError absent is
// false, structuredContent null is none.
func (a *Answer) ResultMember(field string) string {
	v := CanonicalJSON(a.resultField(field))
	switch {
	case field == "isError" && (v == "" || v == "null"):
		return "false"
	case field == "structuredContent" && v == "null":
		return ""
	}
	return v
}

// CanonicalJSON is a JSON value with its members in one order and its
// numbers in one spelling, "" for none; what is not JSON, as it is.
func CanonicalJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var x any
	if json.Unmarshal(raw, &x) != nil {
		return string(raw)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// resultField is one top-level member of the result, nil if absent.
func (a *Answer) resultField(name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(a.Result(), &m) != nil {
		return nil
	}
	return m[name]
}
