#!/usr/bin/env bash
# Set up this machine for parareal_pushing: a venv with pinned dependencies, the ROS 2
# Kilted wheels, the workarounds they need, and the interface build. Idempotent: a second
# run with nothing changed only compares hashes (a few seconds).
#
#   scripts/setup.sh            set up (or bring up to date)
#   scripts/setup.sh --force    redo every step
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${PARAPUSH_VENV:-$ROOT/.venv}
PREFIX=$ROOT/install          # where the ROS package (interfaces + parapush) is installed
BUILD=$ROOT/build/ament
PYTHON=${PYTHON:-python3}
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

log() { printf '[setup] %s\n' "$*" >&2; }

stamp_ok() {  # stamp_ok NAME HASH: true when step NAME already ran for HASH
  [[ $FORCE == 0 && -f "$VENV/.stamp-$1" && "$(cat "$VENV/.stamp-$1")" == "$2" ]]
}
stamp_set() { echo "$2" >"$VENV/.stamp-$1"; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

# 1. System packages: socat makes pty pairs for the emulated gripper's serial line.
if ! command -v socat >/dev/null; then
  if [[ $(id -u) == 0 ]]; then
    log "installing socat (Debian)"
    (apt-get install -y -qq socat >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq socat; }) >/dev/null
  else
    log "socat missing and not root: serial-line gripper tests will be skipped"
  fi
fi

# 2. The virtual environment and the pinned dependencies.
if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating venv $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
lock_hash=$(hash_of "$ROOT/requirements/lock.txt")
if ! stamp_ok deps "$lock_hash"; then
  log "installing pinned dependencies (first run: a few minutes)"
  "$PY" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements/lock.txt" 2>&1 \
    | { grep -v -E "is ignored: it is neither|^$" || true; } >&2
  stamp_set deps "$lock_hash"
fi

# 3. Workaround: the message wheels' exported CMake targets name include folders of the
#    machine they were built on; point them at this venv's (idempotent: no match left).
py_include=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
np_include=$("$PY" -c "import numpy; print(numpy.get_include())")
mapfile -t exports < <(grep -rl "/opt/python/cp311-cp311" "$VENV/share" --include='*.cmake' 2>/dev/null || true)
if ((${#exports[@]})); then
  log "rewriting include paths in ${#exports[@]} exported CMake files"
  sed -i -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$np_include#g" \
         -e "s#/opt/python/cp311-cp311/include/python3.11#$py_include#g" "${exports[@]}"
fi

# 4. The ROS package: generate and build the interfaces, install into $PREFIX.
# launch/ and config/ are installed as copies: a change to them reinstalls too.
iface_hash=$(hash_of "$ROOT/CMakeLists.txt" "$ROOT/package.xml" "$ROOT"/msg/*.msg "$ROOT"/srv/*.srv \
  "$ROOT"/action/*.action <(find "$ROOT/launch" "$ROOT/config" -type f -print0 | sort -z | xargs -0 cat) \
  <(echo "$lock_hash $PREFIX"))
if ! stamp_ok interfaces "$iface_hash" || [[ ! -d "$PREFIX/lib/python3.11/site-packages/parareal_pushing" ]]; then
  log "building the ROS package (interfaces)"
  export CMAKE_PREFIX_PATH="$VENV" AMENT_PREFIX_PATH="$VENV"
  # CMake refuses exported include paths inside the source tree, and the venv's numpy
  # headers are inside it: configure from a staged source folder of links instead (package.xml
  # copied, as ament installs it; CMakeLists.txt installs launch/ and config/ resolved, not as links).
  STAGE=$ROOT/build/package-src
  rm -rf "$BUILD" "$STAGE" && mkdir -p "$STAGE"
  cp "$ROOT/package.xml" "$STAGE/package.xml"
  for item in CMakeLists.txt msg srv action launch config src; do
    ln -s "$ROOT/$item" "$STAGE/$item"
  done
  cmake -S "$STAGE" -B "$BUILD" -DCMAKE_INSTALL_PREFIX="$PREFIX" -DPython3_EXECUTABLE="$PY" \
    -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release >"$ROOT/build/cmake-configure.log" 2>&1 \
    || { tail -30 "$ROOT/build/cmake-configure.log" >&2; log "cmake configure failed (log: build/cmake-configure.log)"; exit 1; }
  cmake --build "$BUILD" -j "$(nproc)" >"$ROOT/build/cmake-build.log" 2>&1 \
    || { tail -30 "$ROOT/build/cmake-build.log" >&2; log "cmake build failed (log: build/cmake-build.log)"; exit 1; }
  # Earlier set-ups installed launch/ and config/ as links into the source tree; installing the
  # real directories through such a link would leave the link in place.
  find "$PREFIX/share/parareal_pushing" -maxdepth 1 -type l -delete 2>/dev/null || true
  cmake --install "$BUILD" >"$ROOT/build/cmake-install.log" 2>&1 \
    || { tail -30 "$ROOT/build/cmake-install.log" >&2; log "cmake install failed"; exit 1; }
  stamp_set interfaces "$iface_hash"
fi

# 5. The core library itself, editable, without touching the pinned dependencies.
core_hash=$(hash_of "$ROOT/pyproject.toml")
if ! stamp_ok core "$core_hash" || ! "$PY" -c "import parapush" 2>/dev/null; then
  log "installing parapush (editable)"
  "$PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$ROOT" 2>&1 \
    | { grep -v -E "is ignored: it is neither|^$" || true; } >&2
  stamp_set core "$core_hash"
fi
log "ready: . scripts/env.sh"
