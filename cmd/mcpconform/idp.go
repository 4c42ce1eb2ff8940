package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpconform/mcpconform/drivers/idp"
	"github.com/mcpconform/mcpconform/internal/cli"
)

const idpUsage = `Usage: mcpconform idp [flags]
       mcpconform idp token --key FILE --issuer URL --subject SUB [--audience AUD] [--ttl D]

Runs the harness's identity provider on its own, until SIGINT or SIGTERM:
JWKS at /jwks.json, discovery at /.well-known/openid-configuration, and, for
loopback clients, POST ` + idp.MintPath + ` {"claims":{"sub":...},"ttl_seconds":N}
which answers {"token":...} signed now, with this IdP as issuer. A repro.sh
of a scenario with principals (IDP=http://ADDR) registers this issuer through
the control API, as the run did, and mints its tokens here.

With a persistent --key and the address a gateway was told to trust (the
run's --idp-key and --idp-addr), it stands in for the run's identity
provider. 'idp token' signs one token from the key file alone and prints it.

Examples:
  mcpconform idp --addr 127.0.0.1:8721
  mcpconform idp --addr 127.0.0.1:9200 --key idp.pem
  mcpconform idp token --key idp.pem --issuer http://127.0.0.1:9200 --subject u-1001

Flags:
`

func idpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "token" {
		return idpTokenCmd(args[1:], stdout, stderr)
	}
	fs := newFlagSet("idp", idpUsage, stderr)
	addr := fs.String("addr", "127.0.0.1:8721", "listen address (host:port; port 0 picks one); the issuer is http://ADDR")
	keyFile := fs.String("key", "", "PEM file holding the signing key (created if missing); default a fresh key for this process")
	aud := fs.String("audience", idp.DefaultAudience, "audience of the tokens it mints when a request names none")
	if _, code, ok := cli.ParseArgs(fs, args, 0); !ok {
		return code
	}
	opts := idp.Options{Addr: *addr, Audience: *aud, Mint: true}
	if *keyFile != "" {
		k, err := idp.Load(*keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "mcpconform idp: %v\n", err)
			return 2
		}
		opts.Key = k
	}
	i, err := idp.Start(opts)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform: %v\n", err) // err says "idp: listen …"
		return 2
	}
	base := "http://" + dialable(i.Addr())
	fmt.Fprintf(stdout, "mcpconform idp: the harness's identity provider (%s, kid %s)\n", i.Key().Alg, i.Key().KID)
	fmt.Fprintf(stdout, "  issuer:    %s\n", i.Issuer())
	fmt.Fprintf(stdout, "  JWKS:      %s\n", i.JWKSURL())
	fmt.Fprintf(stdout, "  audience:  %s\n", i.Audience())
	fmt.Fprintf(stdout, "  mint:      POST %s%s (loopback clients only)\n", base, idp.MintPath)
	fmt.Fprintf(stdout, "listening on %s\n", base)
	<-ctx.Done()
	if err := i.Close(); err != nil {
		fmt.Fprintf(stderr, "mcpconform idp: %v\n", err)
		return 1
	}
	return 0
}

// idpTokenCmd signs one token from a key file: for a gateway that trusts
// the key's JWKS at a fixed issuer, without starting a server.
func idpTokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("idp token", idpUsage, stderr)
	keyFile := fs.String("key", "", "PEM file holding the signing key (required; it must exist)")
	issuer := fs.String("issuer", "", "the iss claim: the issuer the gateway trusts, e.g. http://127.0.0.1:9200 (required)")
	subject := fs.String("subject", "", "the sub claim: the principal's subject (required)")
	aud := fs.String("audience", idp.DefaultAudience, "the aud claim")
	ttl := fs.Duration("ttl", 10*time.Minute, "lifetime; negative for a token that already expired")
	if _, code, ok := cli.ParseArgs(fs, args, 0); !ok {
		return code
	}
	switch {
	case *keyFile == "" || *issuer == "" || *subject == "":
		fmt.Fprintln(stderr, "mcpconform idp token: --key, --issuer and --subject are required")
		return 2
	case *ttl == 0:
		fmt.Fprintln(stderr, "mcpconform idp token: --ttl 0: a token needs a lifetime")
		return 2
	}
	// A key made up here would sign tokens no gateway trusts.
	if _, err := os.Stat(*keyFile); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "mcpconform idp token: %s does not exist (the key the gateway's trusted JWKS holds)\n", *keyFile)
		return 2
	}
	k, err := idp.Load(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform idp token: %v\n", err)
		return 2
	}
	tok, err := idp.Mint(k, *issuer, map[string]any{"sub": *subject, "aud": *aud}, *ttl)
	if err != nil {
		fmt.Fprintf(stderr, "mcpconform idp token: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, tok)
	return 0
}
