#!/usr/bin/env python3
"""to_other.py -- writes a servebench results file's levels in other tools'
formats, for tests/import: one file per level, PREFIX-L<i>.json as
`vllm bench serve --save-result --save-detailed` writes it (the keys its
vllm/benchmarks/serve.py saves: times in seconds, start_times on an arbitrary
clock, request_rate "inf" and max_concurrency for a closed-loop level) and
PREFIX-L<i>.csv as servebench's per-request CSV (open loop by definition).

usage: to_other.py RESULTS.json PREFIX
"""
import json
import sys


def main():
    src, prefix = sys.argv[1], sys.argv[2]
    doc = json.load(open(src))
    for i, lv in enumerate(doc["levels"]):
        reqs = [r for r in lv["requests"] if not r.get("warmup")]
        closed = lv["mode"] == "concurrency"
        ok = [r["error"] is None for r in reqs]
        v = {
            "date": "20261201-101500", "endpoint_type": "vllm", "backend": "vllm",
            "label": None, "model_id": "sim", "tokenizer_id": "sim",
            "num_prompts": len(reqs),
            "request_rate": "inf" if closed else lv["level"],
            "burstiness": 1.0,
            "max_concurrency": int(lv["level"]) if closed else None,
            "duration": lv["duration_s"],
            "completed": sum(ok), "failed": len(reqs) - sum(ok),
            "input_lens": [r["prompt_tokens"] for r in reqs],
            "output_lens": [r["output_tokens"] if o else 0 for r, o in zip(reqs, ok)],
            "ttfts": [r["ttft_ms"] / 1e3 if o else 0.0 for r, o in zip(reqs, ok)],
            "itls": [[g / 1e3 for g in r["itl_ms"]] if o else [] for r, o in zip(reqs, ok)],
            "latencies": [r["e2e_ms"] / 1e3 if o else 0.0 for r, o in zip(reqs, ok)],
            # perf_counter: an arbitrary origin
            "start_times": [5000.0 + r["t_sent_s"] for r in reqs],
            "generated_texts": ["" for r in reqs],
            "errors": ["" if o else r["error"]["message"] or "error" for r, o in zip(reqs, ok)],
        }
        with open("%s-L%d.json" % (prefix, i), "w") as f:
            json.dump(v, f)
        with open("%s-L%d.csv" % (prefix, i), "w") as f:
            f.write("t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error,itl_ms\n")
            for r, o in zip(reqs, ok):
                num = lambda x: "" if x is None else repr(x)
                err = "" if o else (r["error"]["class"] or "error").replace(",", ";")
                f.write("%r,%d,%d,%s,%s,%s,%s\n" % (
                    r["t_sent_s"], r["prompt_tokens"], r["output_tokens"] if o else 0,
                    num(r["ttft_ms"]), num(r["e2e_ms"]), err,
                    " ".join(repr(g) for g in r["itl_ms"])))


if __name__ == "__main__":
    main()
