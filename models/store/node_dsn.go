package store

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// nodeDSNOptions are the go-sql-driver DSN options a db node's DSN may set: TLS,
// timeouts, character set and collation, compression, connection attributes, the
// packet cap, the server's public key (by registered name), the native password
// switch, liveness checks and read-only rejection, plus the options and session
// variables Herald sets itself anyway (NormalizeDSN: parseTime, loc,
// interpolateParams, time_zone, sql_mode). Any other option is refused (NodeDSNRefusal): the
// driver's file and password switches let a hostile server read the files of every
// Herald host or take a password in clear (allowAllFiles, allowCleartextPasswords,
// allowOldPasswords, allowFallbackToPlaintext), multiStatements widens what one
// statement may do, and an unknown option becomes a session variable set on every
// connection.
var nodeDSNOptions = []string{
	"tls", "timeout", "readTimeout", "writeTimeout", "charset", "collation", "compress",
	"connectionAttributes", "maxAllowedPacket", "serverPubKey", "allowNativePasswords",
	"checkConnLiveness", "rejectReadOnly", "parseTime", "loc", "interpolateParams", "timeTruncate",
	"time_zone", "sql_mode",
}

// NodeDSNOptions returns the DSN options a db node's DSN may set, sorted.
func NodeDSNOptions() []string {
	out := slices.Clone(nodeDSNOptions)
	slices.Sort(out)
	return out
}

// NodeDSNRefusal returns why dsn cannot be a db node's DSN, "" when it can: it must
// parse as a go-sql-driver DSN and set only NodeDSNOptions (each option named once
// in the refusal, in the DSN's order).
func NodeDSNRefusal(dsn string) string {
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return "not a DSN of the form user:password@tcp(host:3306)/database"
	}
	var refused []string
	for _, key := range dsnOptionKeys(dsn) {
		if !slices.Contains(nodeDSNOptions, key) && !slices.Contains(refused, key) {
			refused = append(refused, key)
		}
	}
	if len(refused) == 0 {
		return ""
	}
	return fmt.Sprintf("option %s is not allowed in a node's DSN (allowed: %s)", strings.Join(refused, ", "), strings.Join(NodeDSNOptions(), ", "))
}

// dsnOptionKeys returns the option names of dsn's query string, as go-sql-driver
// finds it: after the last '/', from the first '?' on.
func dsnOptionKeys(dsn string) []string {
	_, rest, _ := cutLast(dsn, "/")
	_, query, ok := strings.Cut(rest, "?")
	if !ok {
		return nil
	}
	var keys []string
	for kv := range strings.SplitSeq(query, "&") {
		key, _, found := strings.Cut(kv, "=")
		if !found {
			continue // the driver ignores an option without a value
		}
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		keys = append(keys, key)
	}
	return keys
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// NormalizeNodeDSN is NormalizeDSN for a db node's DSN, whether just given or read
// back from db_nodes: whatever the DSN says, the connection reads no local file,
// sends no password in clear or in the old format, never falls back to plaintext,
// runs one statement per query and sets no session variable beyond Herald's own.
// Errors: the DSN does not parse.
func NormalizeNodeDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse mysql dsn: %w", err)
	}
	cfg.Params = nil // unknown options: session variables
	cfg, err = normalizeConfig(cfg)
	if err != nil {
		return nil, err
	}
	cfg.AllowAllFiles = false
	cfg.AllowCleartextPasswords = false
	cfg.AllowOldPasswords = false
	cfg.AllowFallbackToPlaintext = false
	cfg.MultiStatements = false
	return cfg, nil
}
