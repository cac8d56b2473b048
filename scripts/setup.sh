#!/usr/bin/env bash
# Installs what aesgen needs, once: the Python virtual environment (.venv, pinned by
# requirements.lock) and, with --system, the Debian packages the C/C++ harness builds with.
# Safe to run again: it only acts on what is missing or out of date.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
STAMP="$VENV/.aesgen-installed"

# Debian packages: compilers, ninja, OpenSSL (the test oracle), GoogleTest.
SYSTEM_PACKAGES=(gcc g++ binutils ninja-build libssl-dev libgtest-dev libbenchmark-dev libipsec-mb-dev)

say() { echo "aesgen setup: $*" >&2; }

install_system() {
    local missing=()
    for pkg in "${SYSTEM_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null; then
        say "missing packages ${missing[*]} and no apt-get here; install them by hand"
        exit 2
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            say "missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}"
            exit 2
        fi
    fi
    say "installing Debian packages: ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

install_python() {
    if [ -x "$VENV/bin/aesgen" ] && [ -f "$STAMP" ] && [ "$STAMP" -nt "$ROOT/requirements.lock" ] \
        && [ "$STAMP" -nt "$ROOT/generator/pyproject.toml" ]; then
        return 0
    fi
    local py=${PYTHON:-python3}
    if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        say "aesgen needs Python 3.11 or newer (found: $("$py" --version 2>&1 || echo none))"
        exit 2
    fi
    say "creating the Python environment in .venv (pinned by requirements.lock)"
    "$py" -m venv "$VENV" >&2 || { say "python3 -m venv failed (Debian: apt-get install python3-venv)"; exit 2; }
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements.lock" >&2
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e "$ROOT/generator" >&2
    touch "$STAMP"
}

case "${1:-}" in
    --system) install_system; install_python ;;
    --python|"") install_python ;;
    *) say "usage: scripts/setup.sh [--python|--system]"; exit 2 ;;
esac
