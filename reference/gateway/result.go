package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpconform/mcpconform/reference/jsonobj"
)

// malformedResult replaces a dispatcher answer that is not a JSON object: the
// tool ran (and is paid for), so the call still gets a stored, replayable
// outcome, marked as an error.
const malformedResult = `{"content":[{"type":"text","text":"the tool returned a malformed result"}],"isError":true}`

// withReceipt puts the receipt under _meta[ReceiptMetaKey] of the tool's
// CallToolResult, keeping every other member (content, structuredContent,
// isError, other _meta entries) as the tool sent it.
func withReceipt(result json.RawMessage, rc Receipt) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(result, &obj); err != nil || obj == nil {
		obj = map[string]json.RawMessage{}
		_ = json.Unmarshal([]byte(malformedResult), &obj)
	}
	meta := map[string]json.RawMessage{}
	if m, ok := obj["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil || meta == nil {
			meta = map[string]json.RawMessage{} // a non-object _meta cannot carry the receipt
		}
	}
	rcJSON, err := marshal(rc)
	if err != nil {
		return nil, err
	}
	meta[ReceiptMetaKey] = rcJSON
	if obj["_meta"], err = marshal(meta); err != nil {
		return nil, err
	}
	return marshal(obj)
}

// replayed returns a stored result with its receipt marked replayed, and the
// receipt. Nothing else changes: the client gets the first outcome whole.
func replayed(stored json.RawMessage) (json.RawMessage, Receipt, error) {
	var obj, meta map[string]json.RawMessage
	if err := json.Unmarshal(stored, &obj); err != nil {
		return nil, Receipt{}, fmt.Errorf("stored result: %w", err)
	}
	if err := json.Unmarshal(obj["_meta"], &meta); err != nil {
		return nil, Receipt{}, fmt.Errorf("stored result _meta: %w", err)
	}
	raw, ok := meta[ReceiptMetaKey]
	if !ok {
		return nil, Receipt{}, errors.New("stored result has no receipt")
	}
	var rc Receipt
	if err := json.Unmarshal(raw, &rc); err != nil {
		return nil, Receipt{}, fmt.Errorf("stored receipt: %w", err)
	}
	rc.Replayed = true
	var err error
	if meta[ReceiptMetaKey], err = marshal(rc); err != nil {
		return nil, Receipt{}, err
	}
	// The other members are the stored ones, valid JSON as json.Unmarshal
	// found them: written as they are, not validated again.
	obj["_meta"] = jsonobj.Marshal(meta)
	return jsonobj.Marshal(obj), rc, nil
}

// marshal is json.Marshal without HTML escaping, so "<" in a tool's text
// comes back as "<", byte for byte.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// withoutMember returns a result with one member left out, for the
// replay-drops-structured bug; a result it cannot read is returned as is.
func withoutMember(result json.RawMessage, member string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil {
		return result
	}
	delete(obj, member)
	out, err := marshal(obj)
	if err != nil {
		return result
	}
	return out
}
