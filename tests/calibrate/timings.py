"""timings.py OUTDIR SEED — single-client results files with llama.cpp-style
server timings, drawn from a known truth (see timings.sh)."""
import json
import random
import sys

out, seed = sys.argv[1], int(sys.argv[2])
random.seed(seed)
A, B, SD = 3.0, 0.011, 0.8    # overhead = A + B * prompt tokens (ms), sd SD
PB, PPT, CV = 5.0, 0.5, 0.03  # prefill = (PB + PPT * tokens) * lognormal(cv CV)
D1, N = 10.0, 32              # decode step (ms), output tokens


def level(p, n):
    reqs, t = [], 0.0
    for i in range(n):
        pm = (PB + PPT * p) * random.lognormvariate(-CV * CV / 2, CV)
        ttft = pm + A + B * p + random.gauss(0, SD)
        itl = [D1 * random.lognormvariate(0, 0.05) for _ in range(N - 1)]
        e2e = ttft + sum(itl)
        reqs.append({"id": i, "t_scheduled_s": t, "t_sent_s": t, "t_done_s": t + e2e / 1e3,
                     "ttft_ms": ttft, "e2e_ms": e2e, "wait_ms": ttft - pm, "itl_ms": itl,
                     "prompt_tokens": p, "output_tokens": N,
                     "server": {"prompt_n": p, "prompt_ms": pm, "predicted_n": N,
                                "predicted_ms": sum(itl)},
                     "error": None})
        t += e2e / 1e3
    return {"level": 1, "mode": "concurrency", "requests": reqs}


for p in (16, 256, 1024, 2048):
    doc = {"schema": "servebench.results/1", "source": "measured",
           "target": {"server": "llama.cpp", "slots": 2},
           "workload": {"mode": "concurrency", "levels": [1], "input_len": p, "output_len": N},
           "levels": [level(p, 12)]}
    with open(f"{out}/p{p}.json", "w") as f:
        json.dump(doc, f)
