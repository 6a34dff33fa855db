#!/usr/bin/env python3
"""make_benchmarks.py -- writes benchmarks.json beside it: a GuideLLM report
written by hand (no GuideLLM output copied) in the schema of
vllm-project/guidellm at commit ee7a77457ba668b4b5ccb40f110518829893b36a
(after v0.7.3). The times, counts and errors are chosen here by hand; the
computed fields GuideLLM's model_dump adds (request_latency,
time_to_first_token_ms, ...) are derived as its properties compute them
(src/guidellm/schemas/request_stats.py). servebench reads only some of the
fields; the others are there so the file looks as GuideLLM writes it.

usage: make_benchmarks.py [OUT]   (default: benchmarks.json beside it)
"""
import json
import os
import sys

T0 = 1767225600.0

def usage(tokens, words, chars):
    d = {"text_tokens": tokens, "cached_tokens": None, "text_words": words, "text_characters": chars}
    for k in ["image_tokens", "image_count", "image_pixels", "image_bytes", "video_tokens",
              "video_frames", "video_seconds", "video_bytes", "audio_tokens", "audio_samples",
              "audio_seconds", "audio_bytes", "tool_call_tokens", "mixed_content_tool_tokens",
              "tool_call_count"]:
        d[k] = None
    d["total_tokens"] = tokens
    return d

def req(rid, base, sched, start, first, last, end, pin, pout, iters, status="completed", error=None, proc=0):
    t = lambda x: None if x is None else round(base + x, 6)
    timings = {
        "targeted_start": t(sched), "queued": t(sched - 0.0005), "dequeued": t(sched - 0.0003),
        "scheduled_at": t(sched), "resolve_start": t(start - 0.0002), "request_start": t(start),
        "first_request_iteration": t(first), "first_token_iteration": t(first),
        "first_output_token_iteration": t(first), "last_token_iteration": t(last),
        "last_request_iteration": t(last), "request_iterations": iters, "token_iterations": iters,
        "request_end": t(end), "resolve_end": t(end + 0.0001), "finalized": t(end + 0.0003),
    }
    info = {"request_id": rid, "conversation_id": None, "history_len": 0, "turn_index": 0,
            "node_id": None, "agent_id": None, "parent_node_ids": [], "status": status,
            "scheduler_node_id": 0, "scheduler_process_id": proc,
            "scheduler_start_time": round(base - 0.5, 6), "timings": timings,
            "settings": {"relative_timestamp": None, "requeue_delay": None},
            "error": error, "traceback": None,
            "started_at": t(start), "completed_at": t(end)}
    ts, tf, tl, te = t(start), t(first), t(last), t(end)
    out = pout
    o = {"type_": "generative_request_stats", "request_id": rid,
         "response_id": None if error else "cmpl-" + rid[:8], "request_args": None,
         "output": None, "reasoning_output": None, "tool_calls": None, "info": info,
         "input_metrics": usage(pin, pin * 3 // 4, pin * 4),
         "output_metrics": usage(pout, None if pout is None else pout * 3 // 4,
                                 None if pout is None else pout * 4),
         "request_start_time": ts, "request_end_time": te,
         "request_latency": None if ts is None or te is None else te - ts,
         "prompt_tokens": pin, "cached_tokens": None, "output_tokens": out,
         "total_tokens": pin + (out or 0),
         "time_to_first_token_ms": None if tf is None else 1000 * (tf - ts),
         "time_per_output_token_ms": None if not out else 1000 * ((tl or te) - ts) / out,
         "inter_token_latency_ms": None if tf is None or not out or out <= 1 else 1000 * (tl - tf) / (out - 1),
         "tokens_per_second": None if te is None else (pin + (out or 0)) / (te - ts),
         "output_tokens_per_second": None if te is None or out is None else out / (te - ts),
         "time_to_first_output_token_ms": None if tf is None else 1000 * (tf - ts),
         "iter_tokens_per_iteration": None if not out or out <= 1 or iters <= 1 else (out - 1) / (iters - 1),
         "output_tokens_per_iteration": None if not out or iters < 1 else out / iters}
    return o

def bench(index, strategy, base, reqs_ok, reqs_err, end):
    n_ok, n_err = len(reqs_ok), len(reqs_err)
    sm = {"start_time": round(base - 0.5, 6), "request_start_time": base,
          "measure_start_time": base, "measure_end_time": round(base + end, 6),
          "request_end_time": round(base + end, 6), "end_time": round(base + end + 0.01, 6),
          "requests_made": {"successful": n_ok, "incomplete": 0, "errored": n_err, "total": n_ok + n_err},
          "queued_time_avg": 0.0005, "resolve_start_delay_avg": 0.0002,
          "resolve_targeted_start_delay_avg": 0.0002, "request_start_delay_avg": 0.0002,
          "request_targeted_start_delay_avg": 0.0004, "request_time_avg": 0.2,
          "resolve_end_delay_avg": 0.0001, "resolve_time_avg": 0.2, "finalized_delay_avg": 0.0002,
          "processed_delay_avg": 0.0003}
    return {
        "type_": "generative_benchmark",
        "config": {"id_": "b%d-0000-4000-8000-000000000000" % index,
                   "run_id": "r0000000-0000-4000-8000-000000000000", "run_index": index,
                   "strategy": strategy, "constraints": {"max_number": {"max_num": len(reqs_ok) + len(reqs_err)}},
                   "sample_size": None,
                   "warmup": {"percent": None, "value": None, "mode": "prefer_duration"},
                   "cooldown": {"percent": None, "value": None, "mode": "prefer_duration"},
                   "prefer_response_metrics": True,
                   "profile": {"type_": "concurrent" if index == 0 else "constant"},
                   "requests": {}, "backend": {"kind": "openai_http", "target": "http://localhost:8000",
                                               "model": "Qwen/Qwen3-0.6B"},
                   "environment": {}},
        "scheduler_state": {"node_id": 0, "num_processes": 2, "start_time": round(base - 0.5, 6),
                            "end_time": round(base + end + 0.01, 6),
                            "start_requests_time": base,
                            "created_requests": n_ok + n_err, "queued_requests": 0,
                            "pending_requests": 0, "processing_requests": 0,
                            "processed_requests": n_ok + n_err, "successful_requests": n_ok,
                            "errored_requests": n_err, "cancelled_requests": 0},
        "scheduler_metrics": sm,
        "metrics": {"request_totals": {"successful": n_ok, "incomplete": 0, "errored": n_err,
                                       "total": n_ok + n_err}},
        "requests": {"successful": reqs_ok, "incomplete": [], "errored": reqs_err, "total": None},
        "start_time": base, "end_time": round(base + end, 6), "duration": end,
        "warmup_duration": 0.0, "cooldown_duration": 0.0,
    }

B0 = T0
ok0 = [req("5f0c1a2e-0000-4000-8000-000000000001", B0, 0.0, 0.010, 0.060, 0.150, 0.152, 128, 16, 16, proc=0),
       req("5f0c1a2e-0000-4000-8000-000000000002", B0, 0.0, 0.012, 0.070, 0.200, 0.201, 256, 32, 30, proc=1),
       req("5f0c1a2e-0000-4000-8000-000000000003", B0, 0.1521, 0.153, 0.190, 0.299, 0.300, 64, 8, 8, proc=0)]
b0 = bench(0, {"type_": "concurrent", "worker_count": 2, "max_concurrency": 2, "streams": 2,
               "rampup_duration": 0.0}, B0, ok0, [], 0.301)
B1 = T0 + 10.0
ok1 = [req("7a1d2b3c-0000-4000-8000-000000000001", B1, 0.0, 0.001, 0.041, 0.120, 0.121, 128, 12, 12, proc=0),
       req("7a1d2b3c-0000-4000-8000-000000000002", B1, 0.4, 0.401, 0.446, 0.530, 0.531, 512, 12, 11, proc=1),
       req("7a1d2b3c-0000-4000-8000-000000000003", B1, 0.8, 0.801, 0.839, 0.901, 0.902, 128, 6, 6, proc=0)]
err1 = [req("7a1d2b3c-0000-4000-8000-000000000004", B1, 1.2, 1.201, None, None, 1.250, 300, None, 0,
            status="errored", proc=1,
            error="HTTPStatusError: Server error '503 Service Unavailable' for url "
                  "'http://localhost:8000/v1/chat/completions'")]
b1 = bench(1, {"type_": "constant", "worker_count": 2, "max_concurrency": 8, "rate": 2.5,
               "rampup_duration": 0.0}, B1, ok1, err1, 1.251)
report = {"metadata": {"version": 2, "guidellm_version": "0.7.3", "python_version": "3.12.3",
                       "platform": "Linux-6.8.0-x86_64-with-glibc2.39"},
          "config": {"target": "http://localhost:8000", "profile": "concurrent",
                     "rate": [2.0], "backend": "openai_http", "model": "Qwen/Qwen3-0.6B",
                     "data": ["prompt_tokens=128,output_tokens=16"], "outputs": ["json"],
                     "sample_size": None, "max_requests": 3},
          "benchmarks": [b0, b1]}
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "benchmarks.json")
with open(out, "w") as f:
    json.dump(report, f, indent=1)
with open(out, "a") as f:
    f.write("\n")
