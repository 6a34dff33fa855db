"""pinned_slots.py URL REPS — decode TPOT of llama-server by which slots are busy.

Requests pinned with "id_slot" (llama.cpp), 64 output tokens each, cache_prompt off, at
30- and 600-word prompts; the sets are sent in random order in each of REPS rounds, and the
median and range of the TPOT (server predicted_ms / (predicted_n - 1)) are printed per set.
Start the target first: eval "$(llama/llama.sh start --np 4 --ctx 10240)". See
docs/model-notes.md, "Beyond two slots"."""
import json, random, sys, threading, urllib.request, statistics

url, reps = sys.argv[1], int(sys.argv[2])
words = "alpha beta gamma delta river stone cloud paper light green north table window".split()

def one(slot, nwords, out, res):
    prompt = " ".join(random.choice(words) for _ in range(nwords))
    body = json.dumps({"prompt": prompt, "n_predict": out, "ignore_eos": True,
                       "cache_prompt": False, "id_slot": slot}).encode()
    req = urllib.request.Request(url + "/completion", body, {"Content-Type": "application/json"})
    t = json.load(urllib.request.urlopen(req, timeout=600))["timings"]
    res[slot] = t["predicted_ms"] / (t["predicted_n"] - 1)

def trial(slots, nwords, out=64):
    res = {}
    th = [threading.Thread(target=one, args=(s, nwords, out, res)) for s in slots]
    for t in th: t.start()
    for t in th: t.join()
    return statistics.mean(res.values())

sets = [(0,), (3,), (0, 1), (2, 3), (0, 2), (1, 3), (0, 1, 2), (1, 2, 3), (0, 1, 3), (0, 2, 3), (0, 1, 2, 3)]
for nwords in (30, 600):
    acc = {s: [] for s in sets}
    for r in range(reps):
        order = sets[:]
        random.shuffle(order)
        for s in order:
            acc[s].append(trial(s, nwords))
    print("prompt of %d words" % nwords)
    for s in sets:
        v = sorted(acc[s])
        print("  slots %-9s TPOT ms: median %6.2f  range %6.2f-%6.2f" % (
            ",".join(map(str, s)), statistics.median(v), v[0], v[-1]))
