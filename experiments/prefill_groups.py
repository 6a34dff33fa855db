"""prefill_groups.py URL TOKENS REPS SEED — prompts prefilled together on llama-server.

Each round sends, for each slot set below, one fresh prompt of about TOKENS tokens pinned
to slot 0 alone (the speed reference), then one fresh prompt per slot of the set at once
(one output token each, cache_prompt off, "id_slot" pinned). llama.cpp reports the whole
shared step as every prompt's prompt_ms, so a set whose prompt_ms agree within 5% was
prefilled in one step; a set whose prompt_ms differ was split over steps and is counted,
not timed. Prints one JSON line per set and round, then per set: rounds in one step, the
median and range of (the step's prompt_ms / the single prompt's just before). Start the
target first: eval "$(llama/llama.sh start --np 4 --port P)". See docs/model-notes.md,
"Prompts prefilled together"."""
import json, random, statistics, sys, threading, urllib.request

url, tokens, reps, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
words = ("alpha bravo cedar delta ember fjord gable harbor iris jade kite lumen maple nadir "
         "opal prism quill raven sable tidal umber vale willow xenon yarrow zephyr").split()


def prompt(n):
    return " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(n))


def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=900))


per_word = len(post("/tokenize", {"content": prompt(200)})["tokens"]) / 200.0
nwords = max(1, round(tokens / per_word))


def send(text, out, i, slot):
    r = post("/completion", {"prompt": text, "n_predict": 1, "cache_prompt": False,
                             "stream": False, "id_slot": slot})
    out[i] = (r["timings"]["prompt_ms"], r["timings"]["prompt_n"])


def group(slots):
    out = [None] * len(slots)
    th = [threading.Thread(target=send, args=(prompt(nwords), out, i, s))
          for i, s in enumerate(slots)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return out


sets = [(0, 1), (0, 2), (0, 1, 2), (0, 1, 3), (0, 1, 2, 3)]
ratios = {s: [] for s in sets}
split = {s: 0 for s in sets}
for rep in range(reps):
    for s in sets:
        one = group([0])[0]
        g = group(list(s))
        pm = [x[0] for x in g]
        print(json.dumps({"rep": rep, "slots": s, "single_ms": one[0], "prompt_ms": pm,
                          "prompt_n": [x[1] for x in g]}), flush=True)
        if max(pm) > 1.05 * min(pm):
            split[s] += 1
        else:
            ratios[s].append(max(pm) / one[0])
for s in sets:
    r = ratios[s]
    print("slots %-12s one step %d/%d  step / single: median %s  range %s" % (
        ",".join(map(str, s)), len(r), reps,
        "%.2f" % statistics.median(r) if r else "-",
        "%.2f-%.2f" % (min(r), max(r)) if r else "-"))
