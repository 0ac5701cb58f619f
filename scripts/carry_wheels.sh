#!/usr/bin/env bash
# Downloads, into .wheels/, the wheels of the training stack that the lent GPU machine's image lacks or holds at
# other versions, at the exact versions this checkout's venv has, for that machine's Python (3.12, x86-64,
# manylinux). The device tool's `run` carries .wheels/ (name it in `carry`); there, before bench/bench_train.py:
#
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
#       .wheels/*.whl && export PYTHONPATH=/tmp/site:$PWD
#
# The image has torch, numpy, pandas, pyarrow, pytest, xxhash, httpx and the rest of the HF stack at other versions
# (the device README's KINDS.md lists them); trl, datasets, dill, multiprocess and liger-kernel it lacks. The HF packages are
# carried whole (transformers, peft, accelerate, tokenizers, huggingface_hub, safetensors, hf-xet, fsspec) so
# that the GPU run uses the versions of the CPU run (STACK.md), and they go first on PYTHONPATH; with them what
# huggingface_hub 2.x and transformers 5.19 need that the image may hold older or not at all (httpx2, httpcore2,
# truststore, click, regex, idna, anyio, typing_extensions). Not pyarrow (55 MB; datasets needs >= 24: the
# image's must do). Never torch or nvidia-*: the image's CUDA build of torch is the one to use.
#
# .wheels/ must be ignored by git through .git/info/exclude (done here), and stay well under the 64 MiB that a
# call may carry with the working tree; the total is printed last.
#
# Usage: scripts/carry_wheels.sh [PACKAGE ...]   (default: the list below)
# Env:   PIP (.venv/bin/pip), PYVER (3.12), DEST (.wheels)
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
PYVER=${PYVER:-3.12}
DEST=${DEST:-.wheels}
PACKAGES=("$@")
if [ ${#PACKAGES[@]} -eq 0 ]; then
    PACKAGES=(trl datasets dill multiprocess transformers peft accelerate tokenizers huggingface_hub safetensors
              hf-xet fsspec httpx2 httpcore2 truststore click regex idna anyio
              typing_extensions liger-kernel)
fi

mkdir -p .git/info
grep -qx "/$DEST/" .git/info/exclude 2>/dev/null || echo "/$DEST/" >> .git/info/exclude
mkdir -p "$DEST"

for name in "${PACKAGES[@]}"; do
    case "$name" in torch|nvidia-*|triton) echo "carry_wheels: refusing $name (the image has its own)" >&2; exit 2;; esac
    version=$("$PIP" show "$name" 2>/dev/null | sed -n 's/^Version: //p')
    if [ -z "$version" ]; then
        echo "carry_wheels: $name is not installed in this venv" >&2
        exit 1
    fi
    version=${version%%+*}
    echo "== $name==$version"
    "$PIP" download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$DEST" "$name==$version"
done

# One version of each distribution: two wheels of one name stop the whole install on the device.
dupes=$(ls "$DEST"/*.whl | xargs -n1 basename | cut -d- -f1 | tr 'A-Z-' 'a-z_' | sort | uniq -d)
if [ -n "$dupes" ]; then
    echo "carry_wheels: more than one wheel of: $dupes (empty $DEST and run again)" >&2
    exit 1
fi
ls -l "$DEST"
du -sh "$DEST"
