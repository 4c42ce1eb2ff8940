package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/bugs"
	"github.com/mcpconform/mcpconform/reference/store"
)

func TestDigestIsUnambiguous(t *testing.T) {
	if digest("a|b", "c") == digest("a", "b|c") || digest("ab", "") == digest("a", "b") || digest("") == digest() {
		t.Fatal("different tuples share a digest")
	}
	if digest("x", "y") != digest("x", "y") || len(digest("x")) != 64 {
		t.Fatal("digest is not a deterministic sha256 hex")
	}
	p1 := &PrincipalRef{Provider: "harness", Issuer: "https://idp.test|auth0", Subject: "123"}
	p2 := &PrincipalRef{Provider: "harness", Issuer: "https://idp.test", Subject: "auth0|123"}
	if p1.String() != p2.String() {
		t.Fatal("test premise: the two principals print alike")
	}
	if principalKey(p1) == principalKey(p2) || principalKey(nil) != "" {
		t.Fatal("principal keys collide")
	}
	if recordKey(store.KindClient, "w", "k", "", "t", "permit:p") == recordKey(store.KindPermit, "w", "k", "", "t", "permit:p") {
		t.Fatal("a client key spelled like a permit key shares its record")
	}
}

func TestFloorDiv(t *testing.T) {
	for _, tc := range [][3]int64{{7, 2, 3}, {-7, 2, -4}, {-6, 2, -3}, {0, 5, 0}, {-1, 5, -1}} {
		if got := floorDiv(tc[0], tc[1]); got != tc[2] {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestChooseSlot(t *testing.T) {
	w := 120 * time.Second
	now := time.Unix(0, 0).Add(1000 * w).Add(time.Second) // 1 s into bucket 1000
	p := keyPlan{window: w, bucket: 1000}
	rec := func(bucket int64, attempt int, state string, age time.Duration) store.Record {
		return store.Record{Key: uuid.NewString(), Bucket: bucket, Attempt: attempt, State: state, CreatedAt: now.Add(-age)}
	}
	done, refunded, running := store.StateCompleted, store.StateFailedRefunded, store.StateInProgress
	for _, tc := range []struct {
		name    string
		recs    []store.Record
		floor   bool
		join    int // index into recs, -1 none
		attempt int
	}{
		{"nothing", nil, false, -1, 0},
		{"current bucket", []store.Record{rec(1000, 0, done, 0)}, false, 0, 0},
		{"current bucket running", []store.Record{rec(1000, 0, running, 0)}, false, 0, 0},
		{"previous bucket 2s ago", []store.Record{rec(999, 0, done, 2*time.Second)}, false, 0, 0},
		{"previous bucket 2s ago, floor bug", []store.Record{rec(999, 0, done, 2*time.Second)}, true, -1, 0},
		{"previous bucket a window ago", []store.Record{rec(999, 0, done, w)}, false, -1, 0},
		{"refunded in current", []store.Record{rec(1000, 0, refunded, 0)}, false, -1, 1},
		{"refunded twice", []store.Record{rec(1000, 0, refunded, 0), rec(1000, 1, refunded, 0)}, false, -1, 2},
		{"refunded then done", []store.Record{rec(1000, 0, refunded, 0), rec(1000, 1, done, 0)}, false, 1, 0},
		{"refunded in previous", []store.Record{rec(999, 0, refunded, 2*time.Second)}, false, -1, 0},
		{"previous done, current refunded", []store.Record{rec(999, 0, done, 2*time.Second), rec(1000, 0, refunded, 0)}, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := bugs.Set{}
			if tc.floor {
				set[bugs.FloorBucket] = true
			}
			g := &Gateway{bugs: set}
			join, attempt := g.chooseSlot(tc.recs, p, now)
			switch {
			case tc.join < 0 && join != nil:
				t.Fatalf("joined %+v, want a new slot", *join)
			case tc.join >= 0 && (join == nil || join.Key != tc.recs[tc.join].Key):
				t.Fatalf("joined %v, want record %d", join, tc.join)
			case join == nil && attempt != tc.attempt:
				t.Fatalf("attempt %d, want %d", attempt, tc.attempt)
			}
		})
	}
}

func TestWithReceipt(t *testing.T) {
	rc := Receipt{ID: "rcpt-" + uuid.NewString(), IdempotencyKey: "k", Charged: 3}
	for _, in := range []string{`[1]`, `null`, `"x"`, `{"_meta":"not an object","content":[]}`} {
		body, err := withReceipt(json.RawMessage(in), rc)
		if err != nil {
			t.Fatal(err)
		}
		back, got, err := replayed(body)
		if err != nil || got.ID != rc.ID || !got.Replayed {
			t.Fatalf("%s: replayed %s %+v %v", in, back, got, err)
		}
		if in != `{"_meta":"not an object","content":[]}` && !strings.Contains(string(body), `"isError":true`) {
			t.Fatalf("malformed result %s not marked as an error: %s", in, body)
		}
	}
}
