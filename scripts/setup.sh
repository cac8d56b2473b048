#!/usr/bin/env bash
# Installs what aesgen needs, once: the Python virtual environment (.venv, pinned by
# requirements.lock) and, with --system, the Debian packages the C/C++ harness builds with.
# Safe to run again: it only acts on what is missing or out of date.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
STAMP="$VENV/.aesgen-installed"

# Debian packages: compilers, ninja, OpenSSL (the test oracle), GoogleTest; for `aesgen bench`,
# Google Benchmark and the peers: ipsec-mb, libgcrypt and BoringSSL (Android's, dlopen()ed);
# for `aesgen compare`, llvm-19's llvm-mca (the first with znver4 and sapphirerapids models);
# valgrind, whose memcheck is the tests' second witness of constant time (test_ct_witness.py);
# clang-19 with its compiler-rt (libFuzzer, ASan, UBSan) for `aesgen fuzz` (test_fuzz.py);
# clang-19 also assembles the Mach-O flavour (test_flavours.py); mingw-w64 and wine run the
# win64 flavour (test_win64.py); cmake, meson and make build a consumer of `aesgen vendor`
# (test_vendor.py).
SYSTEM_PACKAGES=(gcc g++ binutils ninja-build libssl-dev libgtest-dev libbenchmark-dev libipsec-mb-dev
                 libgcrypt20-dev android-libboringssl-dev llvm-19 valgrind clang-19 libclang-rt-19-dev
                 mingw-w64 wine64 wine cmake meson make)
# On an amd64 host, the AArch64 harness too: cross compilers, qemu-user to run the result,
# GoogleTest's sources (compiled for aarch64 into build/), OpenSSL's arm64 libcrypto.a
# (Debian multiarch: needs `dpkg --add-architecture arm64`) and the host's openssl command
# (tests/test_aarch64_harness.py checks the kernels under qemu against it).
CROSS_PACKAGES=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user
                googletest libssl-dev:arm64 openssl)

say() { echo "aesgen setup: $*" >&2; }

install_system() {
    local missing=() wanted=("${SYSTEM_PACKAGES[@]}") add_arch=0
    if command -v dpkg >/dev/null && [ "$(dpkg --print-architecture)" = amd64 ]; then
        wanted+=("${CROSS_PACKAGES[@]}")
    fi
    for pkg in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    case " ${missing[*]} " in
        *:arm64\ *) dpkg --print-foreign-architectures | grep -qx arm64 || add_arch=1 ;;
    esac
    if ! command -v apt-get >/dev/null; then
        say "missing packages ${missing[*]} and no apt-get here; install them by hand"
        exit 2
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            local how="sudo apt-get install ${missing[*]}"
            [ $add_arch -eq 1 ] && how="sudo dpkg --add-architecture arm64 && sudo apt-get update && $how"
            say "missing Debian packages: ${missing[*]}; run as root or: $how"
            exit 2
        fi
    fi
    if [ $add_arch -eq 1 ]; then
        say "adding the arm64 package architecture (for libssl-dev:arm64, the AArch64 test oracle)"
        "${sudo[@]}" dpkg --add-architecture arm64
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
