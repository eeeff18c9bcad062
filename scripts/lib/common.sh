# Shared helpers for scripts/bench and scripts/test. Sourced, not run.

TOP="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Each line carries the seconds since the script started: where the time went.
log() { printf '%s [%ds]: %s\n' "$(basename "$0")" "$SECONDS" "$*" >&2; }

need_root() {
  if [[ $EUID -ne 0 ]]; then
    log "run as root: the testbed creates network namespaces and DPDK needs hugepages"
    exit 1
  fi
}

# configure_build DIR MESON_ARGS... [-- TARGETS...]: set up DIR once; later
# runs only rebuild what changed (ninja regenerates by itself when meson.build
# changes). With TARGETS, only those are built.
configure_build() {
  local dir=$1; shift
  local args=() targets=()
  while (( $# )) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  (( $# )) && { shift; targets=("$@"); }
  if [[ ! -f "$TOP/$dir/build.ninja" ]]; then
    meson setup "$TOP/$dir" "$TOP" "${args[@]}"
  fi
  log "building $dir${targets[*]:+ (${targets[*]})}"
  ninja -C "$TOP/$dir" "${targets[@]}"
}

# Reserve 2 MiB hugepages for DPDK; fall back to --no-huge with a warning.
# Exports DPDK_HUGE=1 or DPDK_HUGE=0 for the programs started afterwards.
reserve_hugepages() {
  local want=${1:-512}
  local nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  export DPDK_HUGE=0
  if [[ -w $nr ]]; then
    if (( $(cat $nr) < want )); then echo "$want" > $nr 2>/dev/null || true; fi
    if ! grep -qs ' /dev/hugepages hugetlbfs ' /proc/mounts; then
      mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
    fi
    if (( $(cat $nr) > 0 )) && grep -qs ' hugetlbfs ' /proc/mounts; then
      export DPDK_HUGE=1
      log "hugepages: $(cat $nr) x 2 MiB reserved"
      return
    fi
  fi
  log "WARNING: could not reserve hugepages; DPDK programs run with --no-huge (slower, fine for tests)"
}

# link_commands: harness, dataplane, dataplane-ctl and the benchmarks on PATH (links in
# /usr/local/bin to the release build, or to the debug build when there is
# no release build yet). Each link is reported.
link_commands() {
  local bin=/usr/local/bin name target
  mkdir -p "$bin"
  for name in harness/harness harness/harness-conns dataplane/dataplane dataplane/dataplane-ctl dataplane/dataplane-bench \
      dataplane/offload-bench ctrack/bench/ctrack-bench; do
    target=""
    for dir in build/release build/debug; do
      if [[ -x "$TOP/$dir/$name" ]]; then target="$TOP/$dir/$name"; break; fi
    done
    [[ -n $target ]] || continue
    ln -sfn "$target" "$bin/$(basename "$name")"
    log "on PATH: $bin/$(basename "$name") -> $target"
  done
}
