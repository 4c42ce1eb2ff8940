package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpconform/mcpconform/reference/store/postgres"
)

// DatabasePrefix starts the name of every database the bench creates, so a
// database left by a killed run is recognised as the bench's.
const DatabasePrefix = "mcpconform_bench_"

// Database is a PostgreSQL database the bench creates for itself: the one at
// DATABASE_URL holds whatever earlier test runs left there (tools, wallets,
// records), and its list and index sizes would weigh on the figures.
type Database struct {
	Name   string
	DSN    string // the server's URL with this database in its path
	Server string // "PostgreSQL 15.8 at 127.0.0.1:5432"
	admin  string // the URL it was created through, and is dropped through
}

// CreateDatabase creates the empty database name on the server of dsn (a
// postgres:// URL), through dsn's own database and role, and migrates it.
// A role without CREATEDB gets an error saying so.
func CreateDatabase(ctx context.Context, dsn, name string) (*Database, error) {
	own, err := WithDatabase(dsn, name)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench database: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return nil, fmt.Errorf("bench database: server version: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return nil, fmt.Errorf("bench database: create %s: the role of DATABASE_URL needs CREATEDB (%w)", name, err)
		}
		return nil, fmt.Errorf("bench database: create %s: %w", name, err)
	}
	cfg := conn.Config()
	db := &Database{Name: name, DSN: own, admin: dsn,
		Server: "PostgreSQL " + strings.Fields(version + " ?")[0] + " at " + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	if err := migrate(ctx, own); err != nil {
		return nil, errors.Join(err, db.Drop(context.WithoutCancel(ctx)))
	}
	return db, nil
}

// migrate brings the new database to the gateway's schema once, before
// any gateway process starts on it.
func migrate(ctx context.Context, dsn string) error {
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		return fmt.Errorf("bench database: %w", err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("bench database: %w", err)
	}
	return nil
}

// Drop removes the database, ending any session still on it (a gateway
// process an interrupted run left behind).
func (d *Database) Drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("bench database: drop %s: %w", d.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("bench database: drop %s: %w", d.Name, err)
	}
	return nil
}

// Describe is the database's line of the machine table.
func (d *Database) Describe() string {
	return "`" + d.Name + "` on " + d.Server + ", created empty and migrated for this run, dropped at its end"
}

// WithDatabase returns the postgres:// URL dsn naming database name
// instead of its own.
func WithDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("bench database: parse DATABASE_URL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", fmt.Errorf("bench database: DATABASE_URL is not a postgres:// URL")
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

// LeftDatabases lists the databases on dsn's server whose name starts with
// DatabasePrefix: those of runs killed before they could drop theirs, or of
// a run going on now on another machine.
func LeftDatabases(ctx context.Context, dsn string) ([]string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("bench database: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname", DatabasePrefix)
	if err != nil {
		return nil, fmt.Errorf("bench database: list: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("bench database: list: %w", err)
	}
	return names, nil
}
