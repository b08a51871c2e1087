#!/usr/bin/env bash
# A one-node Slurm on this machine, for tests: Debian's slurm-wlm and munge, slurmctld and
# slurmd on localhost with four fake GPUs (gres), as root and without systemd.
#
#   scripts/slurm-local.sh start   install what is missing, write the config under $SLURM_LOCAL_DIR,
#                                  start munged, slurmctld, slurmd, wait until the node is idle;
#                                  prints `export SLURM_CONF=...`. Idempotent: a cluster this
#                                  script already started is left as it is.
#   scripts/slurm-local.sh stop    end exactly the processes `start` started (their PIDs are in
#                                  $SLURM_LOCAL_DIR/pids), then remove the folder.
#   scripts/slurm-local.sh status  exit 0 when the cluster this script started is up.
#
# Knobs: SLURM_LOCAL_DIR (/tmp/sgtune-slurm-local), SLURM_LOCAL_CPUS (4).
# Why each line is there: ../shared/reference/slurm-local.md and docs/slurm.md.
set -euo pipefail
D=${SLURM_LOCAL_DIR:-/tmp/sgtune-slurm-local}
CPUS=${SLURM_LOCAL_CPUS:-4}
say() { echo "slurm-local: $*" >&2; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

up() {
  [ -f "$D/pids" ] || return 1
  local p
  for p in $(cat "$D/pids"); do alive "$p" || return 1; done
  [ "$(SLURM_CONF=$D/slurm.conf sinfo -h -N -o %T 2>/dev/null)" = idle ] ||
    [ -n "$(SLURM_CONF=$D/slurm.conf sinfo -h -N -o %T 2>/dev/null)" ]
}

install() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
    command -v sbatch >/dev/null && command -v munged >/dev/null; then
    return
  fi
  if [ "$(id -u)" != 0 ]; then
    say "slurmctld/slurmd/munge are not installed and this is not root: install slurmctld slurmd slurm-client munge"
    exit 2
  fi
  say "installing slurmctld slurmd slurm-client munge"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >&2
}

write_config() {
  mkdir -p "$D"/{munge-key,munge-sock,spool/ctld,spool/d,log,run,fakegpu}
  chmod 700 "$D/munge-key"
  if [ ! -f "$D/munge-key/munge.key" ]; then
    dd if=/dev/urandom of="$D/munge-key/munge.key" bs=1 count=1024 status=none
    chmod 600 "$D/munge-key/munge.key"
  fi
  local gres_line="NodeName=localhost Name=gpu File=$D/fakegpu/nvidia[0-3]"
  local i
  for i in 0 1 2 3; do
    [ -e "$D/fakegpu/nvidia$i" ] || mknod "$D/fakegpu/nvidia$i" c 195 "$i" 2>/dev/null || {
      say "warning: mknod not allowed; fake GPUs get no CUDA_VISIBLE_DEVICES"
      gres_line="NodeName=localhost Name=gpu Count=4"
      break
    }
  done
  cat >"$D/slurm.conf" <<CONF
ClusterName=local
SlurmctldHost=localhost
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge-sock/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/spool/ctld
SlurmdSpoolDir=$D/spool/d
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmdParameters=config_overrides
KillWait=5
ReturnToService=2
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  printf 'AutoDetect=off\n%s\n' "$gres_line" >"$D/gres.conf"
}

start() {
  if up; then
    say "already up (pids $(tr '\n' ' ' <"$D/pids"))"
    echo "export SLURM_CONF=$D/slurm.conf"
    return
  fi
  [ -f "$D/pids" ] && stop
  install
  write_config
  cd "$D"
  : >"$D/pids"
  munged -F --force --socket="$D/munge-sock/munge.socket" --key-file="$D/munge-key/munge.key" \
    --pid-file="$D/run/munged.pid" --seed-file="$D/munge-key/munged.seed" </dev/null >>"$D/log/munged.log" 2>&1 9>&- &
  echo $! >>"$D/pids"
  # munged must answer before slurmctld asks it for credentials.
  for _ in $(seq 50); do [ -S "$D/munge-sock/munge.socket" ] && break; sleep 0.1; done
  slurmctld -D -f "$D/slurm.conf" </dev/null >>"$D/log/slurmctld.out" 2>&1 9>&- &
  echo $! >>"$D/pids"
  slurmd -D -f "$D/slurm.conf" -N localhost </dev/null >>"$D/log/slurmd.out" 2>&1 9>&- &
  echo $! >>"$D/pids"
  local t
  for t in $(seq 300); do
    [ "$(SLURM_CONF=$D/slurm.conf sinfo -h -N -o %T 2>/dev/null)" = idle ] && break
    sleep 0.1
  done
  if [ "$(SLURM_CONF=$D/slurm.conf sinfo -h -N -o %T 2>/dev/null)" != idle ]; then
    say "the node did not become idle in 30 s; logs in $D/log"
    tail -n 5 "$D"/log/*.log >&2 || true
    stop
    exit 1
  fi
  say "up after $t polls (pids $(tr '\n' ' ' <"$D/pids")); SLURM_CONF=$D/slurm.conf"
  echo "export SLURM_CONF=$D/slurm.conf"
}

stop() {
  [ -f "$D/pids" ] || { say "nothing to stop"; return; }
  local p pids
  pids=$(cat "$D/pids")
  # slurmd and slurmctld first, munged last (they talk to it while shutting down).
  for p in $(echo "$pids" | tac); do alive "$p" && kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 150); do
    local any=0
    for p in $pids; do alive "$p" && any=1; done
    [ $any = 0 ] && break
    sleep 0.1
  done
  for p in $pids; do alive "$p" && { say "pid $p did not stop on TERM: KILL"; kill -KILL "$p" 2>/dev/null || true; }; done
  rm -rf "$D"
  say "stopped (pids $(echo $pids))"
}

# One start or stop at a time (two test processes may ask at once). The daemons do not
# inherit the lock's descriptor (`9>&-`), or they would hold it for as long as they run.
exec 9>"$D.lock"
flock 9

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) up ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
