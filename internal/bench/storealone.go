package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/postgres"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
	"github.com/mcpconform/mcpconform/reference/tools"
)

// Phase names of the store-alone workload: the gateway's durable work per
// call, with no MCP, HTTP or JSON-RPC in front of it.
const (
	PhaseStoreFirst   = "store alone: keyed first calls"
	PhaseStoreUnkeyed = "store alone: unkeyed calls"
	PhaseStoreReplay  = "store alone: replay reads"
)

// Durations the store-alone records carry: the gateway's defaults
// (gateway.DefaultSettings), copied rather than imported so that the bench
// does not link the gateway twice over; they only set columns' values.
const (
	storePermitTTL = 120 * time.Second
	storeStaleLock = 120 * time.Second
	storeWindow    = 300 * time.Second
)

// StoreAlone issues the gateway's store work for each kind of call straight
// through the store package, at the load's concurrency, on a database of
// its own: what the store alone allows, set beside the bare server's rate
// to give the ideal composition of the two (Ideal).
//
// A keyed first call is the reservation with its auto permit and charge
// (one write), then the outcome with its dispatch row (one write), as
// reference/gateway's call makes them; an unkeyed call is ReserveSlot (the
// identity's lock, its slots read, the reservation and charge, one write),
// then the outcome; a replay is the reads a replay makes: the tool, then
// the stored record. The reads a first call makes before it reserves (the
// tool; the record not there yet, or the lock row) are left out: the
// figure is the durable work's, the store's floor under a first call.
type StoreAlone struct {
	st     store.Store
	drop   func(context.Context) error // removes the database
	wallet string
	apiKey string
	tool   store.Tool
	l      Load
	run    string
	seq    int
	done   []string // record keys the last StoreFirst completed, for StoreReplay
}

// OpenStoreAlone creates a fresh database of kind (SQLite or PostgreSQL)
// and fills it as the gateway's start and the bench's fixture do: migrated,
// the local tools seeded, one wallet and one API key. SQLite's file goes in
// dir; PostgreSQL's database is created on dsn's server, named after name,
// and dropped by Close.
func OpenStoreAlone(ctx context.Context, kind, dir, dsn, name string, l Load) (*StoreAlone, error) {
	s := &StoreAlone{l: l, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	switch kind {
	case SQLite:
		path := filepath.Join(dir, name+".db")
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			return nil, fmt.Errorf("store alone: %w", err)
		}
		s.st = st
		s.drop = func(context.Context) error {
			// The WAL and shared-memory files go with the database.
			return errors.Join(os.Remove(path), rmIfThere(path+"-wal"), rmIfThere(path+"-shm"))
		}
	case PostgreSQL:
		db, err := CreateDatabase(ctx, dsn, name) // migrated already
		if err != nil {
			return nil, fmt.Errorf("store alone: %w", err)
		}
		st, err := postgres.Open(ctx, db.DSN, postgres.Options{})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("store alone: %w", err), db.Drop(context.WithoutCancel(ctx)))
		}
		s.st, s.drop = st, db.Drop
	default:
		return nil, fmt.Errorf("store alone: no store %q", kind)
	}
	if err := s.fill(ctx); err != nil {
		return nil, errors.Join(err, s.Close(context.WithoutCancel(ctx)))
	}
	return s, nil
}

func rmIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (s *StoreAlone) fill(ctx context.Context) error {
	if err := s.st.Migrate(ctx); err != nil {
		return fmt.Errorf("store alone: migrate: %w", err)
	}
	if err := tools.Seed(ctx, s.st); err != nil {
		return fmt.Errorf("store alone: %w", err)
	}
	tool, err := s.st.Tool(ctx, EchoTool)
	if err != nil {
		return fmt.Errorf("store alone: read %s: %w", EchoTool, err)
	}
	s.tool = tool
	now := time.Now()
	s.wallet, s.apiKey = store.NewRowID("w-"), store.NewRowID("k-")
	if err := s.st.CreateWallet(ctx, store.Wallet{ID: s.wallet, CreatedAt: now}); err != nil {
		return fmt.Errorf("store alone: create wallet: %w", err)
	}
	if err := s.st.Credit(ctx, store.LedgerEntry{ID: store.NewRowID("le-"), WalletID: s.wallet, Kind: store.EntryCredit,
		Amount: 1_000_000_000, At: now}); err != nil {
		return fmt.Errorf("store alone: credit wallet: %w", err)
	}
	sum := sha256.Sum256([]byte(s.apiKey))
	if err := s.st.CreateAPIKey(ctx, store.APIKey{ID: s.apiKey, WalletID: s.wallet, SecretHash: sum[:], CreatedAt: now}); err != nil {
		return fmt.Errorf("store alone: create API key: %w", err)
	}
	return nil
}

// Close closes the store and removes its database.
func (s *StoreAlone) Close(ctx context.Context) error {
	return errors.Join(s.st.Close(), s.drop(ctx))
}

func (s *StoreAlone) prefix(tag string) string {
	s.seq++
	return tag + "-" + s.run + "-" + strconv.Itoa(s.seq)
}

func hexSum(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// record is a new reservation as the gateway makes it: its auto permit
// bound to it, and the charge it carries.
func (s *StoreAlone) record(kind, clientKey, args string, now time.Time) (store.ReserveRequest, string) {
	key := hexSum("record", kind, s.wallet, s.apiKey, s.tool.Name, clientKey)
	rec := store.Record{Key: key, Kind: kind, ClientKey: clientKey, WalletID: s.wallet, APIKeyID: s.apiKey,
		Tool: s.tool.Name, Fingerprint: hexSum(args), State: store.StateInProgress, Owner: uuid.NewString(),
		CreatedAt: now, UpdatedAt: now}
	pm := store.Permit{ID: store.NewRowID("pmt-"), WalletID: s.wallet, APIKeyID: s.apiKey, Tool: s.tool.Name,
		Budget: s.tool.Price, ExpiresAt: now.Add(storePermitTTL), Auto: true, RecordKey: key, CreatedAt: now}
	rec.PermitID = pm.ID
	receipt := "rcpt-" + uuid.NewString()
	charge := &store.ChargeRequest{Now: now, Entry: store.LedgerEntry{ID: store.NewRowID("le-"), Kind: store.EntryDebit,
		Amount: s.tool.Price, Receipt: receipt, Tool: s.tool.Name, At: now}}
	return store.ReserveRequest{Record: rec, Permit: &pm, ReplaceRefunded: true, Charge: charge}, receipt
}

// finish stores rec's outcome with its dispatch row: an echo result the
// size of the gateway's, its receipt under _meta.
func (s *StoreAlone) finish(ctx context.Context, rec store.Record, receipt, args string) error {
	body := `{"content":[{"type":"text","text":` + strconv.Quote(args) + `}],"structuredContent":` + args +
		`,"_meta":{"io.mcpconform/receipt":{"id":"` + receipt + `","idempotency_key":` + strconv.Quote(rec.ClientKey) +
		`,"charged":` + strconv.FormatInt(s.tool.Price, 10) + `}}}`
	now := time.Now()
	d := store.Dispatch{ID: store.NewRowID("d-"), Tool: rec.Tool, RecordKey: rec.Key, Fingerprint: rec.Fingerprint,
		WalletID: rec.WalletID, At: now}
	if err := s.st.Finish(ctx, rec.Key, rec.Owner, store.Outcome{State: store.StateCompleted, Receipt: receipt,
		Result: []byte(body), Dispatch: &d, Now: now}); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	return nil
}

// First is a keyed first call's durable work: Reserve with its permit and
// charge, then Finish. The keys it completed are kept for Replay.
func (s *StoreAlone) First(ctx context.Context) Stats {
	prefix := s.prefix("sf")
	var mu sync.Mutex
	var done []string
	st := RunWorkers(ctx, s.l, func(ctx context.Context, _, i int) error {
		args := string(objArg("n", i))
		req, receipt := s.record(store.KindClient, prefix+"-"+strconv.Itoa(i), args, time.Now())
		rec, created, err := s.st.Reserve(ctx, req)
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		if !created {
			return fmt.Errorf("reserve: key %s already had a record", req.Record.ClientKey)
		}
		if err := s.finish(ctx, rec, receipt, args); err != nil {
			return err
		}
		mu.Lock()
		done = append(done, rec.Key)
		mu.Unlock()
		return nil
	})
	s.done = done
	st.Name = PhaseStoreFirst
	return st
}

// Unkeyed is an unkeyed call's durable work: ReserveSlot (the identity's
// lock, its slots read, a new slot reserved with its permit and charge, in
// one write), then Finish. New arguments each, so each is a new identity,
// as the bench's unkeyed phase sends them.
func (s *StoreAlone) Unkeyed(ctx context.Context) Stats {
	prefix := s.prefix("su")
	st := RunWorkers(ctx, s.l, func(ctx context.Context, _, i int) error {
		args := string(objArg(prefix, i))
		now := time.Now()
		identity := s.wallet + "|" + s.tool.Name + "|" + hexSum(s.apiKey, args)
		bucket := now.UnixNano() / int64(storeWindow)
		var receipt string
		rec, created, err := s.st.ReserveSlot(ctx, store.SlotRequest{Identity: identity, Owner: uuid.NewString(),
			Now: now, StaleAfter: storeStaleLock, Since: now.Add(-storeWindow),
			Choose: func(slots []store.Record) (*store.Record, store.ReserveRequest) {
				var req store.ReserveRequest
				req, receipt = s.record(store.KindDerived, "mcp-retry-"+hexSum(identity, strconv.FormatInt(bucket, 10), "0"), args, now)
				req.Record.Identity, req.Record.Bucket = identity, bucket
				req.ReplaceRefunded = false
				return nil, req
			}})
		if err != nil {
			return fmt.Errorf("reserve slot: %w", err)
		}
		if !created {
			return fmt.Errorf("reserve slot: identity %s already had a slot", identity)
		}
		return s.finish(ctx, rec, receipt, args)
	})
	st.Name = PhaseStoreUnkeyed
	return st
}

// Replay is a replay's reads: the API key (with the tool registry's
// version, which lets the gateway use the tool entry it keeps), then the
// stored record of one of the last First's calls, round robin.
func (s *StoreAlone) Replay(ctx context.Context) Stats {
	if len(s.done) == 0 {
		return Stats{Name: PhaseStoreReplay, FirstError: "no store-alone first call to replay"}
	}
	done := s.done
	st := RunWorkers(ctx, s.l, func(ctx context.Context, _, i int) error {
		if _, err := s.st.APIKey(ctx, s.apiKey); err != nil {
			return fmt.Errorf("read API key: %w", err)
		}
		rec, err := s.st.Record(ctx, done[i%len(done)])
		if err != nil {
			return fmt.Errorf("read record: %w", err)
		}
		if rec.State != store.StateCompleted {
			return fmt.Errorf("read record: state %s", rec.State)
		}
		return nil
	})
	st.Name = PhaseStoreReplay
	return st
}
