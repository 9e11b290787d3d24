#!/usr/bin/env bash
# The GPU session in one command (see DESIGN.md and the device notes): run from the repo root
# on the GPU machine with .ctk/ and dist/ carried:
#   source .ctk/setup.sh && bash benchmarks/run_gpu_suite.sh [tests|examples|bench|race|all]...
# Installs the wheel, then runs what is asked; full logs go to $OUT (or /tmp/cutile-out).
set -uo pipefail
OUT="${OUT:-/tmp/cutile-out}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site dist/*.whl
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(all)
want() { for p in "${parts[@]}"; do [ "$p" = "$1" ] || [ "$p" = all ] && return 0; done; return 1; }
summary=()
if want tests; then
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu tests/kernels tests/runtime \
    tests/frontend tests/cli > "$OUT/pytest.log" 2>&1
  summary+=("pytest: $(tail -1 "$OUT/pytest.log")")
fi
if want examples; then
  for e in examples/*.py; do
    timeout 120 python3 "$e" >> "$OUT/examples.log" 2>&1 || echo "FAILED $e" >> "$OUT/examples.log"
  done
  summary+=("examples: $(grep -c FAILED "$OUT/examples.log") failed")
fi
if want race; then
  { python3 -m cutile check examples/race/permute_heads_racy.py; echo "exit $?";
    timeout 120 python3 examples/race/cutile_python_race.py;
    timeout 200 compute-sanitizer --tool racecheck python3 examples/head_permute.py | tail -3;
  } > "$OUT/race.log" 2>&1
  summary+=("race: $(grep -E '^exit|runs differ|RACECHECK' "$OUT/race.log" | tr '\n' ' ')")
fi
if want bench; then
  timeout 300 python3 benchmarks/elementwise.py --json "$OUT/elementwise.json" > "$OUT/elementwise.log" 2>&1
  timeout 300 python3 benchmarks/gemm.py --json "$OUT/gemm.json" > "$OUT/gemm.log" 2>&1
  timeout 200 python3 benchmarks/compile_times.py > "$OUT/compile_times.log" 2>&1
  [ -f benchmarks/launch_overhead.py ] && timeout 200 python3 benchmarks/launch_overhead.py > "$OUT/launch_overhead.log" 2>&1
  [ -f benchmarks/runtime.py ] && timeout 300 python3 benchmarks/runtime.py --json "$OUT/runtime.json" > "$OUT/runtime.log" 2>&1
fi
for s in "${summary[@]}"; do echo "$s"; done
for f in elementwise gemm compile_times launch_overhead runtime; do
  [ -f "$OUT/$f.log" ] && { echo "== $f"; tail -12 "$OUT/$f.log"; }
done
