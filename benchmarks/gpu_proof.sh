#!/bin/bash
# The GPU proof (../shared/gpu/PROOF.md) as one time-boxed command on a lent GPU machine: the CUDA
# tests, the cuda space checked against the installed torch, then benchmarks/suite.py on one
# GPU-sized model (a real search, every preset and the tuned config in one finalist round,
# autotune verify in a fresh process). Everything it writes lands in $OUT (at most 7 files).
#
#   bash benchmarks/gpu_proof.sh MODEL SEARCH_SECONDS [TESTS]   # MODEL: bert-gpu, gpt2-gpu
#
# TESTS=0 skips the checks and tests (a second call on a warm machine). The machine lacks
# autotune's dependencies: fetch them first here with ../shared/gpu/fetch-wheels.sh .whl and carry
# .whl (NO_WHEELS=1 skips installing them; for the transformers models also fetch transformers
# tokenizers huggingface-hub safetensors regex httpx2 click typer hf-xet: huggingface_hub 1.x
# imports httpx2, and its own dependencies come with it only when fetched with them).
# DEVICE (default cuda), TRIALS (default 8), COMPILE_BUDGET (default 90), TESTS_S (the tests' time limit, default 240; collecting alone took
# over 50 s on an H200), PYTEST_K (a pytest -k selection of the GPU tests),
# ACCURACY (an accuracy contract, e.g. 'cosine>=0.999': puts TF32 and autocast in the space),
# SEARCH_EXTRA (more options for each search, e.g. '--preset-finalists best --precision 0.05'), FINAL_S (seconds after the search for the finalist round and verify, default 150)
set -u
model=${1:?model}
search_s=${2:?search seconds}
tests=${3:-1}
out=${OUT:-/tmp/gpu_proof}
mkdir -p "$out"
if [ -d .whl ] && [ -z "${NO_WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1 AUTOTUNE_CACHE_DIR=/tmp/autotune-cache
device=${DEVICE:-cuda}
if [ "$tests" = 1 ]; then
  {
    nvidia-smi
    nproc
    python3 -c "import torch, triton, transformers, optuna, sqlalchemy
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__,
      'transformers', transformers.__version__, 'optuna', optuna.__version__,
      'sqlalchemy', sqlalchemy.__version__)
print(torch.cuda.get_device_name(), torch.cuda.get_device_capability())"
    echo "--- autotune spaces --check cuda --device $device"
    timeout 120 python3 -m autotune.cli spaces --check cuda --device "$device"
    echo "exit $?"
  } > "$out/checks.txt" 2>&1
  timeout "${TESTS_S:-240}" python3 -m pytest -v -p no:cacheprovider -rfE --timeout=120 \
    -k "${PYTEST_K:-not nothing}" tests/measure_tests/test_gpu.py \
    tests/trials_tests/test_cuda_trials.py tests/space_tests/test_knob_effect_gpu.py \
    > "$out/pytest_gpu.log" 2>&1
  echo "exit $?" >> "$out/pytest_gpu.log"
fi
keep=/tmp/gpu_proof_keep
timeout $((search_s + ${FINAL_S:-150})) python3 benchmarks/suite.py --device "$device" --models "$model" \
  --trials "${TRIALS:-8}" --finalists 2 --verify 1 --verbose --keep "$keep" \
  ${ACCURACY:+--accuracy "$ACCURACY"} \
  --search-args "--timeout $search_s --compile-budget ${COMPILE_BUDGET:-90} --measure-seconds 1 ${SEARCH_EXTRA:-}" \
  --json "$out/suite_$model.json" --out "$out/suite_$model.md" > "$out/suite_$model.log" 2>&1
echo "exit $?" >> "$out/suite_$model.log"
tar czf "$out/keep_$model.tgz" -C /tmp gpu_proof_keep autotune-cache/logs 2>/dev/null \
  || tar czf "$out/keep_$model.tgz" -C /tmp gpu_proof_keep
