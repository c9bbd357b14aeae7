"""An independent implementation of `mcscore compare`'s per-task statistics
(scipy and numpy): reads two sample logs and prints, as JSON, the flip
table, McNemar's exact p and mid-p, and the spread of KL and Jensen-Shannon
over the tasks. With --mcnemar B,C ... it prints McNemar's p for each pair.

Usage: compare_reference.py BASE.jsonl OTHER.jsonl NORMALISATION
       compare_reference.py --mcnemar 0,5 2,8 ...
"""
import json
import sys

import numpy as np
from scipy.spatial.distance import jensenshannon
from scipy.special import log_softmax, rel_entr
from scipy.stats import binom, binomtest


def mcnemar(b, c):
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0, 1.0
    p = binomtest(k, n, 0.5, alternative="two-sided").pvalue
    mid = min(1.0, 2.0 * binom.cdf(k, n, 0.5) - binom.pmf(k, n, 0.5))
    return float(p), float(mid)


def tasks(path):
    with open(path) as f:
        return [t for t in map(json.loads, f) if t["type"] == "task"]


def score(option, norm):
    by = {"acc": 1, "acc_norm": option["tokens"], "acc_char": option["chars"], "acc_byte": option["bytes"]}[norm]
    return option["logprob_sum"] / max(by, 1)


def spread(values):
    v = np.asarray(values, dtype=np.float64)
    return {"mean": float(v.mean()), "median": float(np.quantile(v, 0.5)), "p90": float(np.quantile(v, 0.9)),
            "p99": float(np.quantile(v, 0.99)), "max": float(v.max())}


def main():
    if sys.argv[1] == "--mcnemar":
        pairs = [tuple(int(x) for x in a.split(",")) for a in sys.argv[2:]]
        print(json.dumps([{"b": b, "c": c, "p": mcnemar(b, c)[0], "mid_p": mcnemar(b, c)[1]} for b, c in pairs]))
        return
    base, other, norm = tasks(sys.argv[1]), tasks(sys.argv[2]), sys.argv[3]
    assert [t["task"] for t in base] == [t["task"] for t in other]
    flips = dict(right_to_wrong=0, wrong_to_right=0, wrong_to_other_wrong=0, both_right=0, both_wrong=0, same_pick=0)
    kls, jss = [], []
    for tb, to in zip(base, other):
        sb = np.array([score(o, norm) for o in tb["options"]])
        so = np.array([score(o, norm) for o in to["options"]])
        pb, po = int(np.argmax(sb)), int(np.argmax(so))  # argmax keeps the first of equal maxima
        rb, ro = tb["labels"][pb], to["labels"][po]
        flips["same_pick"] += pb == po
        if rb and not ro:
            flips["right_to_wrong"] += 1
        elif ro and not rb:
            flips["wrong_to_right"] += 1
        elif rb and ro:
            flips["both_right"] += 1
        elif pb != po:
            flips["wrong_to_other_wrong"] += 1
        else:
            flips["both_wrong"] += 1
        p, q = np.exp(log_softmax(sb)), np.exp(log_softmax(so))
        kls.append(float(rel_entr(p, q).sum()))
        jss.append(float(jensenshannon(p, q) ** 2))
    p, mid = mcnemar(flips["right_to_wrong"], flips["wrong_to_right"])
    print(json.dumps({"flips": flips, "mcnemar": {"p": p, "mid_p": mid}, "kl": spread(kls), "js": spread(jss),
                      "agreement": flips["same_pick"] / len(base)}))


main()
