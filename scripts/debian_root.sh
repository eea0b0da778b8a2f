# A Debian root made with debootstrap and kept while its recipe is unchanged; sourced by
# scripts/debian13 (LibTorch 2.6), scripts/debian14 (LibTorch 2.14) and scripts/hf-fixtures (HF
# transformers from Debian's archive). Needs root (debootstrap, chroot, mounts).
#
# The sourcing script sets, before calling prepare_root:
#   repo        the checkout; it is mounted at the same path inside the root
#   rootfs      where the root lives (made again from scratch when its recipe changes)
#   suite       the Debian suite (trixie, forky, ...)
#   mirror      the archive
#   components  e.g. "main,contrib,non-free"
#   packages    array: what apt installs into the root
#   root_label  a name for the log lines
# and may define root_before_packages / root_after_packages (run in make_root around the install)
# and root_recipe_extra (more lines that, when changed, make a new root). The LibTorch roots then
# call root_main with their verb (build_dir set: the build folder in the checkout).

root_log() { echo "$root_label: $*" >&2; }

# Runs a command inside the root, in a private mount namespace: the mounts vanish with it.
in_root() {
  unshare --mount --propagation private -- bash -euc '
    r=$1 repo=$2; shift 2
    mount -t proc proc "$r/proc"
    mount --rbind /sys "$r/sys"
    mount --rbind /dev "$r/dev"
    mkdir -p "$r$repo" "$r/tmp"
    mount --bind "$repo" "$r$repo"
    cp /etc/hosts "$r/etc/hosts"
    [ -f /etc/resolv.conf ] && cp /etc/resolv.conf "$r/etc/resolv.conf"
    exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      ${OMP_NUM_THREADS:+OMP_NUM_THREADS=$OMP_NUM_THREADS} DEBIAN_FRONTEND=noninteractive \
      bash -euc "cd \"\$0\" && exec \"\$@\"" "$repo" "$@"
  ' _ "$rootfs" "$repo" "$@"
}

# Everything that decides what the root holds; a change to any of it makes a new root.
root_recipe() {
  printf '%s\n' "suite=$suite" "mirror=$mirror" "components=$components" "${packages[@]}"
  if declare -F root_recipe_extra >/dev/null; then root_recipe_extra; fi
}

# A fresh Debian 12 machine has no debootstrap: install it from the host's archive.
ensure_debootstrap() {
  command -v debootstrap >/dev/null && [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] && return
  root_log "installing debootstrap on the host"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap debian-archive-keyring >&2
}

make_root() {
  ensure_debootstrap
  root_log "making a Debian $suite root in $rootfs (debootstrap from $mirror)"
  rm -rf "$rootfs"
  mkdir -p "$(dirname "$rootfs")"
  # The host's debootstrap may predate the suite (Debian 12's knows no forky): every suite since
  # buster bootstraps the same way as sid.
  local script=/usr/share/debootstrap/scripts/$suite
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
  debootstrap --variant=minbase --components="$components" \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg "$suite" "$rootfs" "$mirror" "$script" >&2
  echo "deb $mirror $suite ${components//,/ }" > "$rootfs/etc/apt/sources.list"
  echo "force-unsafe-io" > "$rootfs/etc/dpkg/dpkg.cfg.d/unsafe-io"   # a scratch root: speed over crash safety
  # The archive may be a dated snapshot, and a testing suite's Release file expires within days.
  echo 'Acquire::Check-Valid-Until "false";' > "$rootfs/etc/apt/apt.conf.d/99tbench-snapshot"
  in_root apt-get update -qq >&2
  if declare -F root_before_packages >/dev/null; then root_before_packages; fi
  root_log "installing ${packages[*]}"
  in_root apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2
  if declare -F root_after_packages >/dev/null; then root_after_packages; fi
  in_root apt-get clean
  root_recipe > "$rootfs/.tbench-recipe"   # written last: a root without it is half-made
  root_log "root ready ($(du -sh "$rootfs" | cut -f1))"
}

# Makes the root unless one with the same recipe is already there.
prepare_root() {
  if [ -f "$rootfs/.tbench-recipe" ] && [ "$(cat "$rootfs/.tbench-recipe")" = "$(root_recipe)" ]; then
    return 0
  fi
  [ -d "$rootfs" ] && root_log "root is missing its recipe stamp or has another recipe: making it again"
  make_root
}

configure_and_build() {
  in_root bash -euc '
    build=$1
    # Configured every time (seconds with a cache): its status lines (the LibTorch version, the
    # backends) go into the log, and scripts/check-cuda-build records them.
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTBENCH_WERROR=ON >&2
    cmake --build "$build" -j"$(nproc)" >&2
  ' _ "$build_dir"
}

# The verbs of a LibTorch root: prepare, build, test [ctest args], shell [command].
root_main() {
  local verb=$1
  shift
  prepare_root
  case "$verb" in
    prepare) root_log "root is current: $rootfs" ;;
    build) configure_and_build ;;
    test)
      configure_and_build
      in_root ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" "$@"
      ;;
    shell) if (($#)); then in_root "$@"; else in_root bash -i; fi ;;
  esac
}
