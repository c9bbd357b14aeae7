"""The independent check of `mcscore schemes` (tests/schemes.rs).

1. inspect_ai's own answer parser: `parse_answers` of inspect_ai 0.3.285's
   multiple-choice solver, taken from the wheel's source (scripts/
   setup-python-stats unpacks it) and run alone, with a stand-in for the
   TaskState it reads (`.output.completion` and `.choices`).
2. The paper's scoring rules, written here from their definitions, on each
   logged response and on the logged option probabilities.

Usage: schemes_reference.py INSPECT_DIR parse   (a JSON list of {completion, k,
       multiple} on stdin; prints the letters inspect_ai reads from each)
       schemes_reference.py INSPECT_DIR LOG     (prints the log's recomputed
       scores, mean per mode, and every disagreement with the log)
"""

import ast
import json
import re
import sys


def inspect_parser(folder):
    """parse_answers from inspect_ai's source, with answer_character."""
    namespace = {"re": re}
    with open(f"{folder}/inspect_ai/_util/answer.py", encoding="utf-8") as f:
        exec(compile(f.read(), "answer.py", "exec"), namespace)
    with open(f"{folder}/inspect_ai/solver/_multiple_choice.py", encoding="utf-8") as f:
        tree = ast.parse(f.read())
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "parse_answers")
    # Its annotations name inspect_ai's types, which are not loaded here.
    function.returns = None
    for arg in function.args.args:
        arg.annotation = None
    exec(compile(ast.Module(body=[function], type_ignores=[]), "_multiple_choice.py", "exec"), namespace)
    parse = namespace["parse_answers"]

    class State:
        def __init__(self, completion, k):
            self.output = type("Output", (), {"completion": completion})()
            self.choices = [None] * k

    return lambda completion, k, multiple: sorted(parse(State(completion, k), multiple))


def letter_index(letter):
    return ord(letter) - ord("A")


def rule(mode, response, key, k):
    """The paper's rule on a response (serde's externally tagged enum)."""
    kind, value = (response, None) if isinstance(response, str) else next(iter(response.items()))
    if mode in ("NR", "NR-Var"):
        return 1.0 if kind == "pick" and value == key else 0.0
    if mode == "NM":
        if kind == "abstain":
            return 0.0
        return 1.0 if kind == "pick" and value == key else -1.0 / (k - 1)
    if mode in ("Elim", "Elim-NM"):
        out = set(value) if kind == "eliminate" else {key}
        distractors = len([i for i in out if i != key])
        if key in out:
            return 0.0 if mode == "Elim" else (distractors - (k - 1)) / (k - 1)
        return distractors / (k - 1)
    if mode == "CBM":
        if kind != "confident":
            return 0.0
        right = value["pick"] == key
        return {1: (1.0, 0.0), 2: (2.0, -2.0), 3: (3.0, -6.0)}[value["level"]][0 if right else 1]
    if mode == "PPA":
        if kind != "allocate":
            return 0.0
        return 1.0 - sum((p - (1.0 if i == key else 0.0)) ** 2 for i, p in enumerate(value)) / 2.0
    if mode == "AUC":
        return (k - value) / (k - 1) if kind == "attempts" else 0.0
    raise ValueError(mode)


def derived(mode, p, key):
    """The response each rule derives from the option probabilities p."""
    k = len(p)
    pick = max(range(k), key=lambda i: (p[i], -i))
    if mode in ("NR", "NR-Var"):
        return {"pick": pick}
    if mode == "NM":
        return {"pick": pick} if p[pick] > 1.0 / k else "abstain"
    if mode in ("Elim", "Elim-NM"):
        return {"eliminate": [i for i in range(k) if p[i] < 1.0 / k]}
    if mode == "CBM":
        level = 1 if p[pick] < 2.0 / 3.0 else 2 if p[pick] < 0.8 else 3
        return {"confident": {"pick": pick, "level": level}}
    if mode == "PPA":
        return {"allocate": p}
    if mode == "AUC":
        rank = 1 + len([i for i in range(k) if p[i] > p[key] or (p[i] == p[key] and i < key)])
        return {"attempts": rank}
    raise ValueError(mode)


def check_log(parse, path):
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    header, records = lines[0], lines[1:]
    problems, sums, logprob_sums = [], {}, {}
    for r in records:
        k, key = r["k"], r["key"]
        for m in r["modes"]:
            mode, response = m["mode"], m["response"]
            where = f"task {r['task']} {mode}"
            expected = rule(mode, response, key, k)
            if abs(expected - m["score"]) > 1e-12:
                problems.append(f"{where}: score {m['score']}, the rule gives {expected}")
            expected = rule(mode, derived(mode, r["p"], key), key, k)
            if abs(expected - m["logprob_score"]) > 1e-12:
                problems.append(f"{where}: log-probability score {m['logprob_score']}, the rule gives {expected}")
            sums[mode] = sums.get(mode, 0.0) + m["score"]
            logprob_sums[mode] = logprob_sums.get(mode, 0.0) + m["logprob_score"]
            # inspect_ai's reading of every answer.
            if mode == "AUC":
                picks = [[letter_index(x) for x in parse(t["response"], k, False)] for t in m["turns"]]
                attempts = next((i + 1 for i, pick in enumerate(picks) if pick == [key]), k)
                if response != {"attempts": attempts}:
                    problems.append(f"{where}: inspect_ai reads {picks} from the attempts, so attempts {attempts}; the log says {response}")
                continue
            (turn,) = m["turns"]
            if mode in ("Elim", "Elim-NM"):
                theirs = [letter_index(x) for x in parse(turn["response"], k, True)]
                mine = response["eliminate"] if isinstance(response, dict) else []
            elif mode == "PPA" or response == "abstain":
                continue
            else:
                theirs = [letter_index(x) for x in parse(turn["response"], k, False)]
                mine = [response["pick"]] if "pick" in response else [response["confident"]["pick"]] if "confident" in response else []
            if theirs != mine:
                problems.append(f"{where}: inspect_ai reads {theirs} from {turn['response']!r}; the log says {response}")
    n = len(records)
    return {
        "modes": header["modes"],
        "tasks": n,
        "means": {mode: s / n for mode, s in sums.items()},
        "logprob_means": {mode: s / n for mode, s in logprob_sums.items()},
        "problems": problems,
    }


def main():
    parse = inspect_parser(sys.argv[1])
    if sys.argv[2] == "parse":
        cases = json.load(sys.stdin)
        json.dump([parse(c["completion"], c["k"], c["multiple"]) for c in cases], sys.stdout)
    else:
        json.dump(check_log(parse, sys.argv[2]), sys.stdout)


if __name__ == "__main__":
    main()
