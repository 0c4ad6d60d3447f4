# The autotune image: a CUDA build of PyTorch, and autotune with its PostgreSQL driver.
#
#   docker build -t autotune .
#   docker run --gpus all -e AUTOTUNE_STORAGE -v "$PWD/models:/models:ro" autotune \
#       worker --study llama --model /models/llama.py
#
# The model file is mounted, never baked in: a worker runs it only when its SHA-256 is the one
# stored with the study. The storage URL comes from $AUTOTUNE_STORAGE (a secret), not argv.
FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime

WORKDIR /opt/autotune
COPY pyproject.toml README.md ./
COPY search_spaces ./search_spaces
COPY autotune ./autotune
# The README's install command for a GPU machine, with the PostgreSQL extra (the base image's
# torch and triton satisfy autotune's requirements and stay). The local package is what is
# installed, so there is no version to pin; kernel caches go to a non-root home.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir '.[postgres]' \
    && useradd --create-home --uid 1000 tuner

USER 1000
WORKDIR /home/tuner
ENV AUTOTUNE_CACHE_DIR=/home/tuner/.cache/autotune

ENTRYPOINT ["autotune"]
CMD ["--help"]
