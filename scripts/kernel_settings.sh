#!/usr/bin/env bash
# Rerun the trajectory-dependent tests (pytest -m trajectory) under several CPU kernel settings.
#
# torch's CPU kernels (oneDNN's RNN and matmul primitives, MKL, ATen's vectorised ops) pick
# their instruction set from the CPU, so one seed follows a different floating-point path on
# an AVX-512 Intel machine than on an AVX2 AMD one. These settings force the other paths on
# this machine, so a test that only one path passes shows up here, not on someone else's CI.
#
# Usage: scripts/kernel_settings.sh [SETTING ...]   (default: all that this CPU can run)
#   native   the CPU's own choice
#   avx512   ONEDNN_MAX_CPU_ISA=AVX512_CORE (only on a CPU with AVX-512)
#   avx2     ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2
#   sse41    ONEDNN_MAX_CPU_ISA=SSE41 MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default
# Extra pytest arguments go in PYTEST_ARGS. PYTHON picks the interpreter (default .venv's).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}

settings_for() {
  case "$1" in
    native) echo "" ;;
    avx512) echo "ONEDNN_MAX_CPU_ISA=AVX512_CORE" ;;
    avx2) echo "ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2" ;;
    sse41) echo "ONEDNN_MAX_CPU_ISA=SSE41 MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default" ;;
    *) echo "unknown kernel setting '$1': choose from native avx512 avx2 sse41" >&2; return 2 ;;
  esac
}

if [ $# -eq 0 ]; then
  set -- native avx2 sse41
  grep -q avx512f /proc/cpuinfo 2>/dev/null && set -- native avx512 avx2 sse41
fi

failed=()
for name in "$@"; do
  vars=$(settings_for "$name") || exit 2
  echo "=== kernel setting '$name': ${vars:-the CPU default}"
  start=$(date +%s)
  # shellcheck disable=SC2086
  env $vars "$PYTHON" -m pytest -m trajectory -q -p no:cacheprovider -n "${PYTEST_WORKERS:-auto}" --dist loadfile ${PYTEST_ARGS:-} || failed+=("$name")
  echo "=== '$name' took $(( $(date +%s) - start )) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "trajectory tests failed under: ${failed[*]}" >&2
  exit 1
fi
