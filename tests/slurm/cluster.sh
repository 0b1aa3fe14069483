#!/usr/bin/env bash
# A single-node Slurm cluster in a directory, for tests/slurm_spec.lua and CI:
#   tests/slurm/cluster.sh start DIR [OWNER_PID]
#       munged, slurmctld and slurmd on this machine, everything under DIR;
#       prints the SLURM_CONF to use once the node is up. With OWNER_PID, a
#       watcher stops them when that process ends, however it ends (the
#       test runner killed mid-test leaves nothing running either).
#   tests/slurm/cluster.sh stop DIR
#       stops them (by the pids in DIR) and waits for them to end.
# A start that fails stops what it had started.
# Needs root (slurmd starts jobs as their user), Debian's slurm-wlm and munge
# (make slurm-deps). No cgroups: proctrack/linuxproc, task/none; one CPU-only
# node named kbnode at 127.0.0.1; ports chosen free at start. Daemon logs:
# DIR/*.log.
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 1; }

free_port() { # the first port from $1 on that nothing listens on
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

stop() {
  local dir=$1 pid name
  for name in watcher slurmd slurmctld munged; do
    [ -f "$dir/$name.pid" ] || continue
    pid=$(cat "$dir/$name.pid")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/$name.pid"
  done
}

start() {
  local dir=$1 owner=${2:-}
  [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as their user)"
  for b in munged slurmctld slurmd sbatch sinfo; do
    command -v "$b" >/dev/null || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null \
      || die "$b not found: install slurm-wlm and munge (make slurm-deps)"
  done
  export PATH=$PATH:/usr/sbin
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  fail() { stop "$dir"; die "$@"; }
  if [ -n "$owner" ]; then
    # the watcher's own pid file is written before it starts waiting, so that
    # stop can end it; its output goes nowhere (a reader of ours would wait)
    setsid bash -c 'echo $$ > "$1/watcher.pid"
      while kill -0 "$2" 2>/dev/null && [ -f "$1/watcher.pid" ]; do sleep 1; done
      rm -f "$1/watcher.pid"; exec "$3" stop "$1"' watcher "$dir" "$owner" "$0" </dev/null >/dev/null 2>&1 &
  fi
  chmod 700 "$dir" "$dir/munge"

  # munge: its own key, socket and files; slurm finds the socket through AuthInfo
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munge.seed" \
    || fail "munged did not start: $(tail -n 5 "$dir/munged.log" 2>/dev/null)"

  local cport dport cpus
  cport=$(free_port $((20000 + $$ % 20000)))
  dport=$(free_port $((cport + 1)))
  cpus=$(nproc)
  cat > "$dir/slurm.conf" <<CONF
ClusterName=kbtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=kbnode NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=$cpus RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes=kbnode Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -c -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -n 5 "$dir/slurmctld.log" 2>/dev/null)"
  slurmd -f "$SLURM_CONF" -N kbnode || fail "slurmd did not start: $(tail -n 5 "$dir/slurmd.log" 2>/dev/null)"
  local state=
  for _ in $(seq 150); do
    state=$(sinfo -h -N -n kbnode -o %T 2>/dev/null || true)
    case $state in idle*) echo "$SLURM_CONF"; return 0 ;; esac
    sleep 0.2
  done
  fail "node kbnode is not idle after 30 s (state '$state'); see $dir/slurmctld.log and $dir/slurmd.log"
}

case ${1:-} in
  start) [ -n "${2:-}" ] || die "usage: cluster.sh start DIR [OWNER_PID]"; start "$2" "${3:-}" ;;
  stop) [ -n "${2:-}" ] || die "usage: cluster.sh stop DIR"; stop "$2" ;;
  *) die "usage: cluster.sh start DIR [OWNER_PID] | stop DIR" ;;
esac
