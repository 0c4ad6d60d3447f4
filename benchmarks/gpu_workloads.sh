#!/bin/bash
# The workload half of the GPU proof (../shared/gpu/PROOF.md steps 1 and 2) as one time-boxed
# command on a lent GPU machine: benchmarks/decode_suite.py (generate() with a static cache:
# eager, transformers' own compile, reduce-overhead + fullgraph, tuned) and
# benchmarks/train_suite.py on the Llama (eager, default compile, tuned under the training
# contract). Everything lands in $OUT.
#
#   bash benchmarks/gpu_workloads.sh [decode,train]
#
# The machine lacks autotune's dependencies and transformers: fetch them here first with
#   ../shared/gpu/fetch-wheels.sh .whl transformers tokenizers huggingface-hub safetensors regex \
#       httpx2 httpcore2 anyio h11 idna certifi truststore sniffio click typer hf-xet
# and carry .whl. DECODE_S / TRAIN_S: each part's time limit (default 330 / 240 s);
# DECODE_TRIALS / TRAIN_TRIALS (default 6 / 4); SECONDS_SIDE: side-by-side timing (default 10);
# VARIANTS: the decode variants (default eager,hf,gpt-fast,tuned); CONFIG: an earlier decode
# search's best-config file (no search).
set -u
parts=${1:-decode,train}
out=${OUT:-/tmp/gpu_workloads}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 AUTOTUNE_CACHE_DIR=/tmp/autotune-cache
device=$(python3 -c "import torch; n = torch.cuda.get_device_name(); print('h200' if 'H200' in n else 'h100' if 'H100' in n else 'gpu')")
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nproc
  python3 -c "import torch, triton, transformers, optuna, sqlalchemy
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__,
      'transformers', transformers.__version__, 'optuna', optuna.__version__,
      'sqlalchemy', sqlalchemy.__version__)"
} > "$out/machine.txt" 2>&1
search="--scope whole --finalists 0 --compile-budget 60 --measure-seconds 1"
if [[ $parts == *decode* ]]; then
  timeout "${DECODE_S:-330}" python3 benchmarks/decode_suite.py --device cuda --batches 1,8 \
    --new 64 --trials "${DECODE_TRIALS:-6}" --seconds "${SECONDS_SIDE:-10}" \
    --variants "${VARIANTS:-eager,hf,gpt-fast,tuned}" ${CONFIG:+--config "$CONFIG"} \
    --search-args "--timeout 110 $search" --out "$out/decode_cuda_$device.md" \
    > "$out/decode_cuda_$device.log" 2>&1
  echo "exit $?" >> "$out/decode_cuda_$device.log"
fi
if [[ $parts == *train* ]]; then
  timeout "${TRAIN_S:-240}" python3 benchmarks/train_suite.py --device cuda --models llama \
    --searches contract --no-front --trials "${TRAIN_TRIALS:-4}" --seconds "${SECONDS_SIDE:-10}" \
    --search-args "--timeout 120 $search" --out "$out/train_suite_cuda_$device.md" \
    > "$out/train_suite_cuda_$device.log" 2>&1
  echo "exit $?" >> "$out/train_suite_cuda_$device.log"
fi
