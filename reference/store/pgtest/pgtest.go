// Package pgtest finds a PostgreSQL server for tests: DATABASE_URL if set,
// else a postgres:16 container started through dockertest when a Docker engine
// answers, else the test is skipped with the reason, or fails when
// MCPCONFORM_REQUIRE_POSTGRES=1 (CI sets it, so a missing server is never a
// silent pass).
//
// A package whose tests may start the container should call Main from its
// TestMain so the container is removed when the tests end.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"
)

// RequireEnv makes a missing server a failure instead of a skip when "1".
const RequireEnv = "MCPCONFORM_REQUIRE_POSTGRES"

var (
	once     sync.Once
	baseDSN  string
	noServer string // why baseDSN is empty
	purge    func()
)

// DSN returns the server's DSN, shared by every caller. Most tests want
// FreshDSN instead.
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(find)
	if baseDSN == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("pgtest: no PostgreSQL server and %s=1: %s", RequireEnv, noServer)
		}
		t.Skipf("pgtest: skipped, no PostgreSQL server: %s (set DATABASE_URL, e.g. from .ci/pgsetup.sh)", noServer)
	}
	return baseDSN
}

// FreshDSN returns a DSN on a new empty schema of its own (first on its
// search_path), dropped when t ends. Tests using it may run in parallel and
// repeatedly against one server; several handles (several gateway processes)
// may share the DSN.
func FreshDSN(t testing.TB) string {
	t.Helper()
	base := DSN(t)
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	admin(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { admin(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	dsn, err := WithSearchPath(base, schema)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

func admin(t testing.TB, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("pgtest: %s: %v", stmt, err)
	}
}

// WithSearchPath returns dsn (URL or keyword/value form) with its session's
// search_path set to schema, through the startup options parameter.
func WithSearchPath(dsn, schema string) (string, error) {
	opt := "-csearch_path=" + schema
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("pgtest: parse dsn: %w", err)
		}
		q := u.Query()
		if old := q.Get("options"); old != "" {
			opt = old + " " + opt
		}
		q.Set("options", opt)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	if strings.Contains(dsn, "options=") {
		return "", fmt.Errorf("pgtest: keyword/value dsn already sets options; use the URL form")
	}
	return strings.TrimSpace(dsn) + " options='" + opt + "'", nil
}

// Main runs the tests, then removes the container if one was started.
func Main(m *testing.M) {
	code := m.Run()
	if purge != nil {
		purge()
	}
	os.Exit(code)
}

func find() {
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		baseDSN = dsn
		return
	}
	dsn, stop, err := StartContainer()
	if err != nil {
		noServer = "DATABASE_URL is not set and " + err.Error()
		return
	}
	baseDSN, purge = dsn, stop
}

// StartContainer starts a postgres:16 container through dockertest and returns
// its DSN and a stop function. It fails fast, with a sentence saying so, when
// no Docker engine answers. mcpconform run --store postgres uses it when
// DATABASE_URL is not set.
func StartContainer() (string, func(), error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", nil, fmt.Errorf("no Docker client: %v", err)
	}
	// Without an engine the client would retry for a long time; ask once.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		return "", nil, fmt.Errorf("no Docker engine is reachable (%v)", err)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "16",
		Env:        []string{"POSTGRES_USER=mcpconform", "POSTGRES_PASSWORD=mcpconform", "POSTGRES_DB=mcpconform"},
		// A test binary killed before Main purges still leaves no container
		// behind for long: the server ends itself after an hour.
		Entrypoint: []string{"timeout", "3600", "docker-entrypoint.sh"},
		Cmd:        []string{"postgres"},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return "", nil, fmt.Errorf("docker could not start postgres:16: %v", err)
	}
	stop := func() { _ = pool.Purge(res) }
	dsn := "postgres://mcpconform:mcpconform@" + res.GetHostPort("5432/tcp") + "/mcpconform?sslmode=disable"
	pool.MaxWait = 90 * time.Second
	err = pool.Retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	})
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("postgres:16 container never accepted connections: %v", err)
	}
	return dsn, stop, nil
}
