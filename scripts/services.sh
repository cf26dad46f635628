#!/usr/bin/env bash
# services.sh makes sure the MariaDB/MySQL and Redis that Herald needs answer
# (`make services`; docs/design.md, "Operations").
#
#   scripts/services.sh [DATABASE...]
#
# MariaDB/MySQL: with HERALD_MYSQL_DSN set, that server must answer (nothing is
# installed or started). Otherwise a server answering on 127.0.0.1:3306 is used,
# as root with an empty password. Otherwise, as root, MariaDB is installed from the
# Debian packages if needed, configured by a drop-in file and started on loopback
# without systemd, and root may then log in over TCP with an empty password.
# Redis: the same with HERALD_REDIS_ADDR and 127.0.0.1:6379.
# Finally the database named in the DSN (default herald) and every DATABASE given
# are created with utf8mb4 when missing.
#
# Running it again changes nothing; it prints what it found.
set -euo pipefail

# The drop-in marks a MariaDB this script configured; see write_mariadb_config.
readonly HERALD_CNF=/etc/mysql/mariadb.conf.d/99-herald.cnf
readonly MARIADBD=/usr/sbin/mariadbd
readonly MARIADB_LOG=/var/log/mysql/error.log
readonly DEFAULT_DSN='root@tcp(127.0.0.1:3306)/herald'
readonly GIB=1073741824

log() { printf 'services: %s\n' "$*"; }
warn() { printf 'services: warning: %s\n' "$*" >&2; }
die() { printf 'services: error: %s\n' "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# require_root WHY exits with a message unless the script runs as root.
require_root() {
	is_root || die "$1, and only root can install or start servers.
  Run 'sudo make services', or point Herald at running servers with
  HERALD_MYSQL_DSN='user:password@tcp(host:3306)/herald' and HERALD_REDIS_ADDR=host:6379."
}

# tcp_open HOST PORT succeeds when a TCP connection opens within 2 s.
tcp_open() {
	# shellcheck disable=SC2016 # $1 and $2 expand in the inner bash
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# split_hostport ADDR DEFAULT_PORT sets HP_HOST and HP_PORT (host, [v6]:port, host:port).
split_hostport() {
	local a=$1
	case $a in
	\[*\]:*) HP_HOST=${a%%]*}; HP_HOST=${HP_HOST#\[}; HP_PORT=${a##*]:} ;;
	\[*\]) HP_HOST=${a#\[}; HP_HOST=${HP_HOST%]}; HP_PORT=$2 ;;
	*:*:*) HP_HOST=$a; HP_PORT=$2 ;; # bare IPv6 address
	*:*) HP_HOST=${a%:*}; HP_PORT=${a##*:} ;;
	*) HP_HOST=$a; HP_PORT=$2 ;;
	esac
	HP_HOST=${HP_HOST:-127.0.0.1}
	HP_PORT=${HP_PORT:-$2}
	[[ $HP_PORT =~ ^[0-9]+$ ]] || die "bad port in address '$1'"
}

# ---------------------------------------------------------------- MariaDB/MySQL

# parse_dsn DSN sets DB_USER, DB_PASS, DB_NET (tcp|unix), DB_HOST, DB_PORT,
# DB_SOCKET, DB_NAME and DB_WHERE the way go-sql-driver reads
# [user[:password]@][net[(addr)]]/dbname[?params]: the last '/' ends the address,
# the last '@' before it ends the credentials, the first ':' splits them.
parse_dsn() {
	local dsn=$1 pre tail cred netaddr addr=""
	[[ $dsn == */* ]] || die "HERALD_MYSQL_DSN has no '/' before the database name
  (go-sql-driver DSN: user:password@tcp(host:3306)/herald)"
	pre=${dsn%/*}
	tail=${dsn##*/}
	DB_NAME=${tail%%\?*}
	if [[ $pre == *@* ]]; then
		cred=${pre%@*}
		netaddr=${pre##*@}
	else
		cred=""
		netaddr=$pre
	fi
	DB_USER=${cred%%:*}
	DB_PASS=""
	[[ $cred == *:* ]] && DB_PASS=${cred#*:}
	DB_NET=${netaddr%%(*}
	if [[ $netaddr == *\(* ]]; then
		[[ $netaddr == *\) ]] || die "HERALD_MYSQL_DSN: the address after '(' must end with ')'"
		addr=${netaddr#*(}
		addr=${addr%)}
	fi
	DB_NET=${DB_NET:-tcp}
	case $DB_NET in
	tcp | tcp4 | tcp6)
		DB_NET=tcp
		split_hostport "${addr:-127.0.0.1:3306}" 3306
		DB_HOST=$HP_HOST DB_PORT=$HP_PORT DB_SOCKET=""
		DB_WHERE="$DB_HOST:$DB_PORT"
		;;
	unix)
		DB_SOCKET=${addr:-/tmp/mysql.sock}
		DB_HOST="" DB_PORT=""
		DB_WHERE="unix socket $DB_SOCKET"
		;;
	*) die "HERALD_MYSQL_DSN: unsupported network '$DB_NET' (use tcp or unix)" ;;
	esac
}

mysql_answers() {
	if [ "$DB_NET" = unix ]; then
		[ -S "$DB_SOCKET" ]
	else
		tcp_open "$DB_HOST" "$DB_PORT"
	fi
}

mysql_client() { command -v mariadb || command -v mysql || true; }

# sql QUERY runs QUERY on the DSN's server as the DSN's user (no option files, as
# the Go driver) and prints rows tab-separated without a header.
sql() {
	local client conn=()
	client=$(mysql_client)
	if [ "$DB_NET" = unix ]; then
		conn=(--protocol=socket --socket="$DB_SOCKET")
	else
		conn=(--protocol=tcp --host="$DB_HOST" --port="$DB_PORT")
	fi
	[ -n "$DB_USER" ] && conn+=(--user="$DB_USER")
	MYSQL_PWD=$DB_PASS "$client" --no-defaults "${conn[@]}" --connect-timeout=5 \
		--batch --skip-column-names -e "$1"
}

# sql_socket QUERY runs QUERY as the local root over the unix socket (unix_socket
# authentication; the socket path comes from the server's option files).
sql_socket() {
	env -u MYSQL_PWD "$(mysql_client)" --protocol=socket --user=root \
		--batch --skip-column-names -e "$1"
}

mariadb_running() { start-stop-daemon --status --exec "$MARIADBD" >/dev/null 2>&1; }

mariadb_datadir() {
	local d=""
	command -v my_print_defaults >/dev/null && d=$(my_print_defaults --mysqld | sed -n 's/^--datadir=//p' | tail -n 1)
	printf '%s\n' "${d:-/var/lib/mysql}"
}

# write_mariadb_config writes the drop-in with docs/design.md, "Operations"'s settings. The Debian
# defaults (a 128 MiB buffer pool, 96 MiB of redo log) stall under ~100 MB/s of
# message bodies.
write_mariadb_config() {
	local want
	want="# Written by Herald's scripts/services.sh (make services); see DESIGN §9.
# A MariaDB for development and tests, on loopback only.
[mysqld]
user                    = mysql
bind-address            = 127.0.0.1
port                    = 3306
character-set-server    = utf8mb4
collation-server        = utf8mb4_unicode_ci
innodb_buffer_pool_size = 1G
innodb_log_file_size    = 1G
max_allowed_packet      = 64M
max_connections         = 1000
log_error               = $MARIADB_LOG
"
	if [ -f "$HERALD_CNF" ] && [ "$(cat "$HERALD_CNF")"$'\n' = "$want" ]; then
		log "MariaDB config $HERALD_CNF is up to date"
		return
	fi
	mkdir -p "$(dirname "$HERALD_CNF")"
	printf '%s' "$want" >"$HERALD_CNF"
	chmod 0644 "$HERALD_CNF"
	log "wrote MariaDB config $HERALD_CNF"
}

# fix_root_login lets root log in over TCP from loopback with an empty password,
# as the default DSN does. Debian's root@localhost only accepts unix_socket
# authentication; with skip-name-resolve a TCP client is root@127.0.0.1 instead.
fix_root_login() {
	log "letting root log in over TCP 127.0.0.1 with an empty password (loopback only)"
	sql_socket "ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('')" ||
		die "could not change root@localhost through the unix socket"
	sql "SELECT 1" >/dev/null 2>&1 && return
	log "adding root@127.0.0.1 and root@::1 (the server skips name resolution)"
	sql_socket "CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
GRANT ALL PRIVILEGES ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS root@'::1' IDENTIFIED VIA mysql_native_password USING PASSWORD('');
GRANT ALL PRIVILEGES ON *.* TO root@'::1' WITH GRANT OPTION;" ||
		die "could not create root@127.0.0.1 through the unix socket"
}

# start_mariadb configures and starts the installed MariaDB without systemd and
# waits up to 60 s for 127.0.0.1:3306 to answer.
start_mariadb() {
	local datadir extra=() i
	write_mariadb_config
	# Debian's my.cnf includes mariadb.conf.d; a hand-written one may not.
	if ! my_print_defaults --mysqld | grep -qx -- '--innodb_buffer_pool_size=1G'; then
		log "the option files do not include $(dirname "$HERALD_CNF"); passing $HERALD_CNF to mariadbd"
		extra=(--defaults-extra-file="$HERALD_CNF")
	fi
	datadir=$(mariadb_datadir)
	if [ ! -d "$datadir/mysql" ]; then
		log "initialising the MariaDB data directory $datadir"
		mariadb-install-db "${extra[@]}" --user=mysql --datadir="$datadir" --skip-test-db >/tmp/herald-mariadb-install-db.log 2>&1 ||
			die "mariadb-install-db failed; see /tmp/herald-mariadb-install-db.log"
	fi
	install -d -o mysql -g mysql -m 0755 /run/mysqld
	[ -d "$(dirname "$MARIADB_LOG")" ] || install -d -o mysql -g adm -m 2750 "$(dirname "$MARIADB_LOG")"
	if mariadb_running; then
		log "mariadbd is running but 127.0.0.1:3306 does not answer yet; waiting"
	else
		log "starting MariaDB on 127.0.0.1:3306 (log: $MARIADB_LOG)"
		start-stop-daemon --start --oknodo --background --exec "$MARIADBD" -- "${extra[@]}"
	fi
	for i in $(seq 60); do
		tcp_open 127.0.0.1 3306 && break
		if [ "$i" -gt 2 ] && ! mariadb_running; then
			tail -n 20 "$MARIADB_LOG" >&2 2>/dev/null || true
			die "mariadbd exited during start-up; see $MARIADB_LOG"
		fi
		sleep 1
	done
	tcp_open 127.0.0.1 3306 || die "MariaDB did not answer on 127.0.0.1:3306 within 60 s; see $MARIADB_LOG"
	log "MariaDB answers on 127.0.0.1:3306"
}

# report_innodb prints the buffer pool and redo log sizes of a server this run did
# not start, with docs/design.md, "Operations"'s recommendation when they are smaller than 1 GiB.
report_innodb() {
	local row bp lf
	row=$(sql "SELECT @@innodb_buffer_pool_size, @@innodb_log_file_size" 2>/dev/null) || row=""
	read -r bp lf <<<"$row" || true
	if [[ $bp =~ ^[0-9]+$ && $lf =~ ^[0-9]+$ ]] && [ "$bp" -ge $GIB ] && [ "$lf" -ge $GIB ]; then
		log "innodb_buffer_pool_size=$((bp >> 20))M innodb_log_file_size=$((lf >> 20))M (≥1 GiB each, as the README recommends)"
		return
	fi
	[[ $bp =~ ^[0-9]+$ ]] && bp="$((bp >> 20))M" || bp="?"
	[[ $lf =~ ^[0-9]+$ ]] && lf="$((lf >> 20))M" || lf="?"
	log "hint: this server has innodb_buffer_pool_size=$bp innodb_log_file_size=$lf; set both to ≥1G (MySQL 8: innodb_redo_log_capacity) and restart it, or Herald stalls under heavy publishing (docs/design.md, "Operations")"
}

# report_connections prints max_connections of a server this run did not start and,
# when it is below 1000 (what a server this script starts gets from its drop-in),
# what to set: the test suite runs several Heralds at once, each with its own pool.
# It never changes the server: a user's own server is theirs to configure.
report_connections() {
	local n
	n=$(sql "SELECT @@max_connections" 2>/dev/null) || return 0
	[[ $n =~ ^[0-9]+$ ]] || return 0
	if [ "$n" -ge 1000 ]; then
		log "max_connections=$n"
		return
	fi
	log "hint: this server has max_connections=$n; parallel tests and several Herald processes want about 1000: set max_connections = 1000 under [mysqld] (or SET GLOBAL max_connections = 1000 until it restarts). Nothing was changed."
}

# ensure_database NAME creates database NAME with utf8mb4 unless it exists.
ensure_database() {
	local name=$1 cs
	[[ $name =~ ^[A-Za-z0-9_-]+$ ]] || die "database name '$name': use letters, digits, '_' and '-' only"
	cs=$(sql "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '$name'") ||
		die "could not list databases on $DB_WHERE as '$DB_USER'"
	if [ -z "$cs" ]; then
		sql "CREATE DATABASE IF NOT EXISTS \`$name\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci" ||
			die "could not create database $name on $DB_WHERE as '$DB_USER'"
		log "created database $name (utf8mb4)"
	elif [ "$cs" = utf8mb4 ]; then
		log "database $name exists (utf8mb4)"
	else
		warn "database $name exists with character set $cs; Herald expects utf8mb4"
	fi
}

# plan_mysql decides where MariaDB/MySQL comes from: MYSQL_MODE is given, found or start.
plan_mysql() {
	if [ -n "${HERALD_MYSQL_DSN:-}" ]; then
		parse_dsn "$HERALD_MYSQL_DSN"
		mysql_answers || die "MariaDB/MySQL does not answer at $DB_WHERE (from HERALD_MYSQL_DSN);
  start it, or unset HERALD_MYSQL_DSN to use or start one on 127.0.0.1:3306"
		MYSQL_MODE=given
		log "MariaDB/MySQL answers at $DB_WHERE (HERALD_MYSQL_DSN)"
	else
		parse_dsn "$DEFAULT_DSN"
		if mysql_answers; then
			MYSQL_MODE=found
			log "MariaDB/MySQL answers on 127.0.0.1:3306; using it"
		else
			MYSQL_MODE=start
			require_root "nothing answers on 127.0.0.1:3306"
		fi
	fi
}

setup_mysql() {
	local err name
	declare -A seen=()
	if [ "$MYSQL_MODE" = start ]; then
		start_mariadb
	fi
	if ! err=$(sql "SELECT 1" 2>&1 >/dev/null); then
		if [ "$MYSQL_MODE" != given ] && [ -f "$HERALD_CNF" ] && is_root; then
			# A MariaDB this script configured (maybe in a run that was interrupted).
			fix_root_login
			err=$(sql "SELECT 1" 2>&1 >/dev/null) || die "root still cannot log in over TCP: $err"
		elif [ "$MYSQL_MODE" = given ]; then
			die "cannot log in to $DB_WHERE as '$DB_USER' (HERALD_MYSQL_DSN): $err"
		else
			die "cannot log in to 127.0.0.1:3306 as root with an empty password: $err
  Either set HERALD_MYSQL_DSN='user:password@tcp(127.0.0.1:3306)/herald' (the user needs
  CREATE and DROP for the tests' databases), or let root in:
  sudo mariadb -e \"ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('')\""
		fi
	fi
	log "logged in to $DB_WHERE as '$DB_USER': $(sql "SELECT VERSION()")"
	if [ "$MYSQL_MODE" != start ]; then
		if [ -f "$HERALD_CNF" ] && [ "$MYSQL_MODE" = found ]; then
			log "($HERALD_CNF is present: MariaDB was configured by an earlier run)"
		fi
		report_innodb
		report_connections
	fi
	for name in "$DB_NAME" "$@"; do
		[ -n "$name" ] || continue
		[ -z "${seen[$name]:-}" ] || continue
		seen[$name]=1
		ensure_database "$name"
	done
}

# ---------------------------------------------------------------------- Redis

# redis_reply HOST PORT prints the server's one-line reply to PING (e.g. +PONG).
redis_reply() {
	# shellcheck disable=SC2016 # the script expands in the inner bash
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2" || exit 1
printf "PING\r\n" >&3
IFS= read -r line <&3
printf "%s\n" "$line"' _ "$1" "$2" 2>/dev/null
}

# redis_check HOST PORT WHERE succeeds when Redis answers PING; it warns when the
# server wants a password that HERALD_REDIS_PASSWORD does not give.
redis_check() {
	local reply
	reply=$(redis_reply "$1" "$2") || reply=""
	reply=${reply%$'\r'}
	case $reply in
	+PONG) log "Redis answers at $1:$2 ($3)" ;;
	-NOAUTH*)
		log "Redis answers at $1:$2 ($3) and requires a password"
		[ -n "${HERALD_REDIS_PASSWORD:-}" ] || warn "set HERALD_REDIS_PASSWORD for Redis at $1:$2"
		;;
	"") return 1 ;;
	*) warn "Redis at $1:$2 answered PING with: $reply" ;;
	esac
}

# plan_redis decides where Redis comes from: REDIS_MODE is given, found or start.
plan_redis() {
	if [ -n "${HERALD_REDIS_ADDR:-}" ]; then
		split_hostport "$HERALD_REDIS_ADDR" 6379
		redis_check "$HP_HOST" "$HP_PORT" HERALD_REDIS_ADDR ||
			die "Redis does not answer at $HP_HOST:$HP_PORT (from HERALD_REDIS_ADDR);
  start it, or unset HERALD_REDIS_ADDR to use or start one on 127.0.0.1:6379"
		REDIS_MODE=given
	elif redis_check 127.0.0.1 6379 "found running; using it"; then
		REDIS_MODE=found
	elif tcp_open 127.0.0.1 6379; then
		die "something listens on 127.0.0.1:6379 but does not answer Redis PING; stop it, or set HERALD_REDIS_ADDR"
	else
		REDIS_MODE=start
		require_root "nothing answers on 127.0.0.1:6379"
	fi
}

# start_redis starts redis-server on loopback without persistence (a development
# and test server) and waits up to 30 s for PING.
start_redis() {
	local args=(--daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no) i
	[ -d /var/lib/redis ] && args+=(--dir /var/lib/redis)
	[ -d /var/log/redis ] && args+=(--logfile /var/log/redis/redis-server.log)
	log "starting Redis on 127.0.0.1:6379"
	redis-server "${args[@]}"
	for i in $(seq 30); do
		[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] && break
		sleep 1
	done
	[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] ||
		die "Redis did not answer on 127.0.0.1:6379 within 30 s"
	log "Redis answers on 127.0.0.1:6379"
}

# ------------------------------------------------------------------- packages

POLICY_RC_D=/usr/sbin/policy-rc.d

# install_packages PKG... installs Debian packages, running apt-get update only
# when the install fails without it. A temporary policy-rc.d keeps the packages'
# maintainer scripts from starting the servers with their default settings;
# start_mariadb and start_redis start them.
install_packages() {
	local guard=""
	require_root "installing $* is needed"
	command -v apt-get >/dev/null || die "apt-get not found: install $* yourself (this script knows Debian/Ubuntu)"
	log "installing $* from the distribution's packages"
	if [ ! -e "$POLICY_RC_D" ]; then
		printf '#!/bin/sh\n# Temporary, from herald scripts/services.sh.\nexit 101\n' >"$POLICY_RC_D"
		chmod 0755 "$POLICY_RC_D"
		guard=1
		trap 'rm -f "$POLICY_RC_D"' EXIT
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y "$@"; then
		log "apt-get install failed; running apt-get update and trying again"
		apt-get update
		apt-get install -y "$@"
	fi
	if [ -n "$guard" ]; then
		rm -f "$POLICY_RC_D"
		trap - EXIT
	fi
}

# ----------------------------------------------------------------------- main

main() {
	local pkgs=()
	plan_mysql
	plan_redis
	if [ "$MYSQL_MODE" = start ] && [ ! -x "$MARIADBD" ]; then
		pkgs+=(mariadb-server mariadb-client)
	elif [ -z "$(mysql_client)" ]; then
		is_root || die "no mariadb or mysql client found; install mariadb-client"
		pkgs+=(mariadb-client)
	fi
	if [ "$REDIS_MODE" = start ] && ! command -v redis-server >/dev/null; then
		pkgs+=(redis-server)
	fi
	if [ ${#pkgs[@]} -gt 0 ]; then
		install_packages "${pkgs[@]}"
	fi
	setup_mysql "$@"
	if [ "$REDIS_MODE" = start ]; then
		start_redis
	fi
	log "ready: MariaDB/MySQL at $DB_WHERE, Redis at ${HERALD_REDIS_ADDR:-127.0.0.1:6379}"
}

main "$@"
