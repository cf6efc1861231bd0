#!/usr/bin/env bash
# A single-host Slurm from Debian's packages, for gridsched's demos and tests (groundwork of a Slurm-backed site).
#
#   scripts/slurm.sh start [DIR]          install what is missing, start munge, slurmctld, slurmd
#                                         and slurmrestd (JWT on TCP); DIR: /tmp/gridsched-slurm
#   scripts/slurm.sh stop  [DIR]          stop the three Slurm daemons started for DIR
#   scripts/slurm.sh token [DIR] [USER]   print a JWT for USER (default: the submitter user)
#
# `start` installs (apt-get, when missing) munge, slurmctld, slurmd, slurm-client, slurmrestd
# and slurm-wlm-jwt-plugin; makes sure munged runs (as the `munge` user); writes DIR/slurm.conf
# for one node `localhost` that advertises 16 CPUs whatever the host has (config_overrides), a
# licence pool matlab:2 and one default partition `main`; starts slurmctld and slurmd in the
# foreground under setsid/nohup, and slurmrestd on 127.0.0.1:PORT with rest_auth/jwt as the
# unprivileged system user `slurmrest` (created when missing; slurmrestd refuses root); then
# checks that a token of the submitter user is accepted by a REST ping. Running `start` again
# while the daemons run starts nothing new (it rewrites slurm.conf only when it changed, then
# `scontrol reconfigure`s).
#
# Output of `start`: progress and daemon messages go to stderr; stdout holds exactly two
# lines, in this order, both shell assignments:
#
#   SLURM_CONF=/tmp/gridsched-slurm/slurm.conf
#   SLURM_REST_URL=http://127.0.0.1:6820
#
# so `set -a; eval "$(scripts/slurm.sh start)"; set +a` exports both (the Slurm clients need
# SLURM_CONF in their environment). `token` prints the bare JWT on stdout (one line; send it
# as X-SLURM-USER-TOKEN with X-SLURM-USER-NAME set to the same user).
#
# `stop` ends slurmrestd, slurmd and slurmctld by their recorded PIDs (TERM, then KILL after
# 10 s) and leaves munged running: it is the host's shared authentication daemon, cheap when
# idle, and the next `start` reuses it. The controller's state stays in DIR/state, so the next
# `start` recovers queued jobs and job IDs go on from where they were. A `start` that fails
# half way leaves the daemons that did come up; `stop` ends them. A port already held by
# something else (another DIR's instance, say) makes `start` refuse rather than talk to it.
#
# Files in DIR: slurm.conf, jwt_hs256.key (mode 600), state/ (slurmctld), spool/ (slurmd),
# run/*.pid, log/{slurmctld,slurmd}.log, log/*.stderr (each daemon's own stderr; slurmrestd
# logs there only), log/jobcomp.txt (one line per finished job), work/ (mode 1777: a place
# for job output).
#
# Environment (all optional):
#   GRIDSCHED_SLURM_PORT       slurmrestd TCP port                        (6820)
#   GRIDSCHED_SLURM_CPUS       CPUs the node advertises                   (16)
#   GRIDSCHED_SLURM_USER       the user jobs are submitted as over REST   (root)
#   GRIDSCHED_SLURM_REST_USER  the unprivileged user running slurmrestd   (slurmrest)
#   GRIDSCHED_SLURM_LIFESPAN   lifetime of a `token`, seconds             (86400)
#   GRIDSCHED_SLURM_ACCOUNTING 1: with accounting and multifactor priority (0)
#
# With GRIDSCHED_SLURM_ACCOUNTING=1, `start` also installs mariadb-server and slurmdbd, runs
# MariaDB on 127.0.0.1:3306 with its data in DIR/mysql (database slurm_acct_db, user slurm) and
# slurmdbd on port 6819 (DIR/slurmdbd.conf, beside slurm.conf where slurmdbd looks for it),
# registers the cluster, and gives slurm.conf AccountingStorageType=accounting_storage/slurmdbd
# with AccountingStorageEnforce=associations and PriorityType=priority/multifactor: the classic
# fair-share factor alone (PriorityFlags=NO_FAIR_TREE, PriorityWeightFairshare, the other weights
# 0), its half-life and period from these (all optional):
#   GRIDSCHED_SLURM_WEIGHT     PriorityWeightFairshare                    (100)
#   GRIDSCHED_SLURM_HALF_LIFE  PriorityDecayHalfLife, minutes             (60)
#   GRIDSCHED_SLURM_CALC       PriorityCalcPeriod, minutes                (1)
# `stop` then ends slurmdbd and MariaDB too. `gridctl bench --against slurm-fairshare` runs a
# stream through it and through gridsched's classic fair share, side by side.
#
# Exit status: 0 done; 1 a daemon did not come up (the tail of its log is on stderr) or a step
# failed; 2 bad usage. One instance per host: slurmctld and slurmd use the fixed ports 6817 and
# 6818.
set -euo pipefail

usage() {
    cat >&2 <<'EOF'
usage: scripts/slurm.sh start [DIR]
       scripts/slurm.sh stop  [DIR]
       scripts/slurm.sh token [DIR] [USER]
DIR defaults to /tmp/gridsched-slurm.
EOF
}

cmd=${1:-}
case "$cmd" in
    start | stop) [ $# -le 2 ] || { usage; exit 2; } ;;
    token) [ $# -le 3 ] || { usage; exit 2; } ;;
    -h | --help | help) usage; exit 0 ;;
    *) usage; exit 2 ;;
esac

DIR=$(realpath -m "${2:-/tmp/gridsched-slurm}")
PORT=${GRIDSCHED_SLURM_PORT:-6820}
CPUS=${GRIDSCHED_SLURM_CPUS:-16}
SUBMIT_USER=${GRIDSCHED_SLURM_USER:-root}
REST_USER=${GRIDSCHED_SLURM_REST_USER:-slurmrest}
LIFESPAN=${GRIDSCHED_SLURM_LIFESPAN:-86400}
ACCOUNTING=${GRIDSCHED_SLURM_ACCOUNTING:-0}
FS_WEIGHT=${GRIDSCHED_SLURM_WEIGHT:-100}
HALF_LIFE=${GRIDSCHED_SLURM_HALF_LIFE:-60}
CALC=${GRIDSCHED_SLURM_CALC:-1}
DB_PASS=gridsched-slurmdbd
CONF=$DIR/slurm.conf
REST_URL=http://127.0.0.1:$PORT
API=v0.0.38
# The slurmctld APIs only: the dbv0.0.3x plugins need slurmdbd and stop slurmrestd without it.
REST_PLUGINS=openapi/v0.0.38,openapi/v0.0.37,openapi/v0.0.36
export SLURM_CONF=$CONF

say() { echo "== $*" >&2; }
die() { echo "slurm.sh: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# The tail of a daemon's logs on stderr, then exit 1.
fail() {
    local name=$1
    shift
    echo "slurm.sh: $name did not come up: $*" >&2
    local f
    for f in "$DIR/log/$name.log" "$DIR/log/$name.stderr"; do
        if [ -s "$f" ]; then
            echo "--- tail of $f" >&2
            tail -n 25 "$f" >&2
        fi
    done
    exit 1
}

# The PID recorded for a daemon, if that process still runs the daemon; else nothing.
running_pid() {
    local name=$1 pid
    pid=$(cat "$DIR/run/$name.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 1
    echo "$pid"
}

# Starts a daemon that stays in the foreground, detached from this shell (own session, no
# hangup), and records its PID. setsid does not fork here: a background job of a script is not
# a process-group leader, so $! is the daemon itself after the execs. It runs in $DIR, not in the
# caller's directory: slurmrestd fails every submission ("getcwd failed") once the checkout it
# was started from is removed.
spawn() {
    local name=$1
    shift
    : >"$DIR/log/$name.stderr"
    (cd "$DIR" && exec setsid nohup "$@" </dev/null >>"$DIR/log/$name.stderr" 2>&1) &
    echo $! >"$DIR/run/$name.pid"
}

# The recorded process is there at all (just after spawn it may still be setsid/nohup/setpriv
# on its way to exec the daemon). The daemon rewrites its PID file as it starts (slurmctld
# truncates, then writes): an empty file is read again rather than taken for a daemon gone.
alive() {
    local pid="" i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        pid=$(cat "$DIR/run/$1.pid" 2>/dev/null) || pid=""
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] && [ -d "/proc/$pid" ]
}

# wait_until NAME SECONDS COMMAND...: polls COMMAND every 0.2 s; fails with NAME's log when the
# time is up or when NAME's process has gone.
wait_until() {
    local name=$1 secs=$2
    shift 2
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        alive "$name" || fail "$name" "the process exited"
        [ "$SECONDS" -lt "$deadline" ] || fail "$name" "not ready after ${secs}s"
        sleep 0.2
    done
}

token_for() {
    local out
    out=$(scontrol token username="$1" lifespan="$2") || return 1
    echo "${out#SLURM_JWT=}"
}

install_packages() {
    local missing=() pkg wanted=(munge slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin)
    [ "$ACCOUNTING" = 1 ] && wanted+=(mariadb-server mariadb-client slurmdbd)
    for pkg in "${wanted[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    say "installing ${missing[*]}"
    as_root apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    if munge_ok; then return 0; fi
    say "starting munged"
    local d
    for d in /etc/munge /var/lib/munge /var/log/munge /run/munge; do
        mkdir -p "$d"
        chown munge:munge "$d"
    done
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0755 /run/munge
    if [ ! -s /etc/munge/munge.key ]; then
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile=/etc/munge/munge.key
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        fi
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
    # --force: a munged that died leaves its socket behind; only reached when no munged answers.
    runuser -u munge -- /usr/sbin/munged --force
    local deadline=$((SECONDS + 15))
    until munge_ok; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "slurm.sh: munged did not come up" >&2
            tail -n 25 /var/log/munge/munged.log >&2 2>/dev/null || true
            exit 1
        fi
        sleep 0.2
    done
}

write_conf() {
    local mem_mb tmp
    mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
    [ "$mem_mb" -gt 0 ] || mem_mb=1024
    tmp=$(mktemp "$DIR/.slurm.conf.XXXXXX")
    cat >"$tmp" <<EOF
# Written by gridsched's scripts/slurm.sh: a single-host Slurm for demos and tests.
ClusterName=gridsched
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
# slurmrestd on TCP authenticates its callers with tokens from 'scontrol token'.
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/jwt_hs256.key

# Everything this instance writes lives in $DIR.
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info

# No cgroups, no MPI, no mail on this kind of host.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true

# Without slurmdbd: one line per finished job in a text file; finished jobs stay visible to
# scontrol and slurmrestd for MinJobAge seconds.
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
MinJobAge=3600
MaxJobCount=100000

# Start batch jobs within about a second of submission (defaults: 3 s delay, 30 s backfill).
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
InactiveLimit=0

Licenses=matlab:2

# The node advertises $CPUS CPUs whatever the host has: slurmd takes the configured figures.
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem_mb State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=1-00:00:00 State=UP
EOF
    if [ "$ACCOUNTING" = 1 ]; then
        cat >>"$tmp" <<EOF

# Accounting in slurmdbd; jobs need an association; the fair-share factor alone orders them.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
AccountingStorageEnforce=associations
PriorityType=priority/multifactor
PriorityFlags=NO_FAIR_TREE
PriorityDecayHalfLife=$HALF_LIFE
PriorityCalcPeriod=$CALC
PriorityWeightFairshare=$FS_WEIGHT
PriorityWeightAge=0
PriorityWeightJobSize=0
PriorityWeightPartition=0
PriorityWeightQOS=0
PriorityWeightAssoc=0
PriorityFavorSmall=NO
EOF
    fi
    chmod 0644 "$tmp"
    if [ -f "$CONF" ] && cmp -s "$tmp" "$CONF"; then
        rm -f "$tmp"
        return 1
    fi
    mv -f "$tmp" "$CONF"
    return 0
}

rest_ping() {
    local tok
    tok=$(token_for "$SUBMIT_USER" 60) || return 1
    curl -sf --max-time 5 -H "X-SLURM-USER-NAME: $SUBMIT_USER" -H "X-SLURM-USER-TOKEN: $tok" \
        "$REST_URL/slurm/$API/ping" | grep -q '"pings"'
}

# Refuses to start a daemon whose port something else already holds (e.g. an instance for
# another DIR): its clients would talk to that one instead.
port_free() {
    local name=$1 port=$2
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "slurm.sh: cannot start $name: 127.0.0.1:$port is already in use" >&2
        ss -ltnp "sport = :$port" >&2 2>/dev/null || true
        exit 1
    fi
}

node_ready() {
    local state
    state=$(sinfo -h -n localhost -o %T 2>/dev/null) || return 1
    case "$state" in idle | mixed | allocated | completing) return 0 ;; *) return 1 ;; esac
}

mysql_ok() { mariadb --protocol=socket --socket="$DIR/mysql/mysqld.sock" -e 'select 1' >/dev/null 2>&1; }

# MariaDB with its data in DIR/mysql, the database and user slurmdbd uses.
start_mariadb() {
    if ! running_pid mariadbd >/dev/null; then
        mkdir -p "$DIR/mysql"
        chown mysql:mysql "$DIR/mysql"
        if [ ! -d "$DIR/mysql/mysql" ]; then
            say "initialising MariaDB in $DIR/mysql"
            mariadb-install-db --user=mysql --datadir="$DIR/mysql" --skip-test-db >&2
        fi
        port_free mariadbd 3306
        say "starting MariaDB"
        spawn mariadbd /usr/sbin/mariadbd --user=mysql --datadir="$DIR/mysql" \
            --socket="$DIR/mysql/mysqld.sock" --pid-file="$DIR/mysql/mariadbd.pid" \
            --bind-address=127.0.0.1 --port=3306 --log-error="$DIR/mysql/mariadbd.err"
    fi
    wait_until mariadbd 60 mysql_ok
    mariadb --protocol=socket --socket="$DIR/mysql/mysqld.sock" >&2 <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
}

# slurmdbd over that database; the cluster registered in it.
start_slurmdbd() {
    local tmp
    tmp=$(mktemp "$DIR/.slurmdbd.conf.XXXXXX")
    cat >"$tmp" <<EOF
# Written by gridsched's scripts/slurm.sh (GRIDSCHED_SLURM_ACCOUNTING=1).
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
    chmod 0600 "$tmp"
    mv -f "$tmp" "$DIR/slurmdbd.conf"
    if ! running_pid slurmdbd >/dev/null; then
        port_free slurmdbd 6819
        say "starting slurmdbd"
        spawn slurmdbd /usr/sbin/slurmdbd -D
    fi
    wait_until slurmdbd 60 sacctmgr -n list cluster
    if ! sacctmgr -n -P list cluster format=cluster | grep -qx gridsched; then
        sacctmgr -i add cluster gridsched >&2
    fi
}

do_start() {
    [ "$(id -u)" -eq 0 ] || die "start must run as root (slurmd starts jobs as their users)"
    install_packages
    start_munge

    mkdir -p "$DIR"/{state,spool,run,log,work}
    chmod 0755 "$DIR" "$DIR/run" "$DIR/log"
    chmod 1777 "$DIR/work"
    if [ ! -s "$DIR/jwt_hs256.key" ]; then
        (umask 077 && dd if=/dev/urandom of="$DIR/jwt_hs256.key" bs=32 count=1 status=none)
    fi
    chown root:root "$DIR/jwt_hs256.key"
    chmod 0600 "$DIR/jwt_hs256.key"

    local changed=0
    if write_conf; then changed=1; fi
    if [ "$ACCOUNTING" = 1 ]; then
        start_mariadb
        start_slurmdbd
    fi

    id "$SUBMIT_USER" >/dev/null 2>&1 || die "the submitter user $SUBMIT_USER does not exist"
    if ! id "$REST_USER" >/dev/null 2>&1; then
        say "creating system user $REST_USER"
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$REST_USER"
    fi

    if running_pid slurmctld >/dev/null; then
        if [ "$changed" -eq 1 ]; then
            say "slurm.conf changed: scontrol reconfigure"
            scontrol reconfigure >&2
        fi
    else
        port_free slurmctld 6817
        say "starting slurmctld"
        spawn slurmctld /usr/sbin/slurmctld -D -i -f "$CONF"
    fi
    wait_until slurmctld 60 scontrol ping

    if ! running_pid slurmd >/dev/null; then
        port_free slurmd 6818
        say "starting slurmd"
        spawn slurmd /usr/sbin/slurmd -D -N localhost -f "$CONF"
    fi
    wait_until slurmd 60 node_ready

    if ! running_pid slurmrestd >/dev/null; then
        port_free slurmrestd "$PORT"
        say "starting slurmrestd on $REST_URL as $REST_USER"
        # SLURM_JWT=daemon: slurmrestd talks to slurmctld with auth/jwt, passing on each
        # caller's token (without it, it uses munge and rejects every token).
        SLURM_JWT=daemon \
            spawn slurmrestd setpriv --reuid="$REST_USER" --regid="$REST_USER" --init-groups -- \
            /usr/sbin/slurmrestd -f "$CONF" -a rest_auth/jwt -s "$REST_PLUGINS" "127.0.0.1:$PORT"
    fi
    # The submitter's token is accepted end to end: slurmrestd → slurmctld (auth/jwt).
    wait_until slurmrestd 30 rest_ping

    say "slurm is up: $(sinfo -h -o '%P %D %C %T' | head -1) (partition nodes cpus(A/I/O/T) state)"
    echo "SLURM_CONF=$CONF"
    echo "SLURM_REST_URL=$REST_URL"
}

stop_one() {
    local name=$1 pid i
    if ! pid=$(running_pid "$name"); then
        rm -f "$DIR/run/$name.pid"
        return 0
    fi
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
        [ -d "/proc/$pid" ] || break
        sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then
        echo "slurm.sh: $name did not stop in 10 s: killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$DIR/run/$name.pid"
}

do_stop() {
    [ -d "$DIR" ] || { say "nothing to stop in $DIR"; return 0; }
    stop_one slurmrestd
    stop_one slurmd
    stop_one slurmctld
    stop_one slurmdbd
    stop_one mariadbd
    say "stopped (munged left running)"
}

do_token() {
    [ -f "$CONF" ] || die "no $CONF: run 'scripts/slurm.sh start' first"
    token_for "${3:-$SUBMIT_USER}" "$LIFESPAN" || die "scontrol token failed (is slurmctld up?)"
}

case "$cmd" in
    start) do_start ;;
    stop) do_stop ;;
    token) do_token "$@" ;;
esac
