#!/usr/bin/env bash
# quickstart.sh — installs what servebench needs, builds it, and predicts the
# seed guide's server (RTX 3050 laptop GPU, qwen2.5:0.5b under Ollama, model
# embedded in the binary) under load: the closed-loop sweep of the guide's
# Experiments 3-4 with 4 slots, and Poisson traffic at 3.0 req/s on 8 slots.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
echo "== Closed loop, 4 slots, 256 prompt / 128 output tokens (guide Experiments 3-4)"
build/app/sbsim --slots 4 --concurrency 1,2,4,5,6,8 --input-len 256 --output-len 128 \
  --requests 64 --replications 10 --seed 1
echo
echo "== Open loop, 8 slots, Poisson arrivals at 3.0 req/s"
build/app/sbsim --slots 8 --rate 3.0 --seed 1
