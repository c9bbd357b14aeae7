# Exports lm-evaluation-harness tasks for `mcscore build --lm-eval`.
#
# lm-eval itself renders every request: simple_evaluate runs with a model
# that only records what it is asked (so few-shot contexts, seeds, --limit,
# process_docs functions and groups are lm-eval's own), and answers every
# request with a placeholder that is never reported. What it was asked, and
# the results skeleton that does not depend on scores (configs, versions,
# n-shot, n-samples, groups), go to one JSON file that mcscore reads.
#
# argv[1]: a JSON object {tasks, include_path, limit, num_fewshot,
# fewshot_seed}. Exit 0: the export is on stdout. Exit 3: a refusal, as
# JSON {"task", "reason", "kind"} on the last line of stderr ("load": the
# task or its data could not be loaded). Anything else: a crash,
# whose traceback is on stderr.
import hashlib
import json
import numbers
import os
import re
import sys

# The export goes to the stdout mcscore reads; whatever lm-eval, datasets or
# a task's own code prints goes to stderr.
export = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)


# The metrics mcscore computes, each as the mean of a per-document 0 or 1.
SUPPORTED = ("acc", "acc_norm", "acc_bytes", "acc_mutual_info")


def refuse(task, reason, kind="refused"):
    sys.stderr.write("\n" + json.dumps({"task": task, "reason": reason, "kind": kind}) + "\n")
    sys.exit(3)


args = json.loads(sys.argv[1])
try:
    import lm_eval
    from lm_eval import evaluator
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager
except ImportError as error:
    refuse(None, f"lm-eval cannot be imported by this Python ({error})")

manager = TaskManager(include_path=args["include_path"]) if args["include_path"] else TaskManager()

for name in args["tasks"]:
    if name not in manager.all_tasks:
        refuse(name, "lm-eval knows no task, group or tag of this name")

# Load each name alone first, so that a failure names its task.
loaded = {}
for name in args["tasks"]:
    try:
        loaded[name] = manager.load([name])
    except Exception as error:  # lm-eval and datasets raise many kinds
        refuse(name, f"lm-eval could not load it: {type(error).__name__}: {error}", "load")
owner = {}
for name, found in loaded.items():
    for task_name in found["tasks"]:
        if task_name in owner:
            refuse(task_name, f"both {owner[task_name]} and {name} hold it; name each task once")
        owner[task_name] = name
for name, found in loaded.items():
    for task_name, task in found["tasks"].items():
        if callable(task.config.process_results):
            refuse(task_name, "its own process_results computes its metrics, which scores of its options do not reproduce")
        if task.OUTPUT_TYPE != "multiple_choice":
            refuse(task_name, f"its output_type is {task.OUTPUT_TYPE}, not multiple_choice")
        if task.multiple_input:
            refuse(task_name, "each option has its own context (as in Winogrande); a task file holds one context per task")
        if task.multiple_target:
            refuse(task_name, "a document may have several correct options; a task file holds one")
        if getattr(task, "MULTIMODAL", False) or task.config.doc_to_image or task.config.doc_to_audio:
            refuse(task_name, "it is multimodal")


class Recorder(LM):
    """Records each request; its placeholder answers are never reported."""

    def __init__(self):
        super().__init__()
        self.requests = []

    def loglikelihood(self, requests, disable_tqdm=False):
        self.requests.extend(requests)
        return [(0.0, False)] * len(requests)

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        refuse(requests[0].task_name if requests else None, "it asks for rolling log-likelihoods, not multiple choice")

    def generate_until(self, requests, disable_tqdm=False):
        refuse(requests[0].task_name if requests else None, "it asks for generated text, not multiple choice")


recorder = Recorder()
results = evaluator.simple_evaluate(
    model=recorder,
    tasks=args["tasks"],
    task_manager=manager,
    limit=args["limit"],
    num_fewshot=args["num_fewshot"],
    fewshot_random_seed=args["fewshot_seed"],
    bootstrap_iters=0,
    log_samples=False,
)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def yaml_of(name):
    entry = manager.task_index.get(name)
    path = getattr(entry, "yaml_path", None) if entry is not None else None
    return (str(path), sha256_file(path)) if path else (None, None)


# The tasks lm-eval evaluated, with the objects that built their requests.
tasks = {}
for found in loaded.values():
    tasks.update(found["tasks"])

by_task = {}
for request in recorder.requests:
    by_task.setdefault(request.task_name, {}).setdefault(request.doc_id, []).append(request)

out_tasks = {}
for task_name, task in tasks.items():
    docs = []
    for doc_id, requests in sorted(by_task.get(task_name, {}).items()):
        requests.sort(key=lambda r: r.idx)
        doc = requests[0].doc
        choices = task.doc_to_choice(doc)
        # acc_mutual_info's unconditional requests follow the options: not exported.
        requests = requests[: len(choices)]
        contexts = {r.arguments[0] for r in requests}
        if len(contexts) != 1:
            refuse(task_name, f"document {doc_id}: its options have different contexts; a task file holds one context per task")
        gold = task.doc_to_target(doc)
        # As lm-eval's process_results reads it: a choice's text, or an index.
        if isinstance(gold, str):
            gold = choices.index(gold) if gold in choices else None
        elif isinstance(gold, numbers.Integral) and 0 <= int(gold) < len(choices):
            gold = int(gold)
        else:
            gold = None
        docs.append(
            {
                "doc_id": doc_id,
                "gold": gold,
                "choices": list(choices),
                "context": requests[0].arguments[0],
                "continuations": [r.arguments[1] for r in requests],
            }
        )
    config = task.config
    # The metrics lm-eval computes for it (its metric_list, or lm-eval's
    # defaults), each averaged over documents or not.
    aggregation = task.aggregation()
    metrics, dropped = [], []
    for metric in task._metric_fn_list:
        averaged = getattr(aggregation.get(metric), "__name__", None) == "mean"
        (metrics if averaged and metric in SUPPORTED else dropped).append(metric)
    yaml_path, yaml_sha256 = yaml_of(task_name)
    dataset_kwargs = config.dataset_kwargs or {}
    out_tasks[task_name] = {
        "alias": results["results"].get(task_name, {}).get("alias", task_name),
        "docs": docs,
        "metrics": metrics,
        "dropped": dropped,
        "yaml": yaml_path,
        "yaml_sha256": yaml_sha256,
        "dataset_path": config.dataset_path,
        "dataset_name": config.dataset_name,
        "split": config.test_split or config.validation_split,
        "revision": dataset_kwargs.get("revision"),
        "data_files": dataset_kwargs.get("data_files"),
    }

groups = {}
exports = []
for name, found in loaded.items():
    for group_name, group in found["groups"].items():
        yaml_path, yaml_sha256 = yaml_of(group_name)
        groups[group_name] = {
            "alias": group.alias or group.name,
            "children": list(found["group_map"].get(group_name, [])),
            "leaves": [t.task_name for t in group.get_all_tasks()],
            "aggregate": [
                {"metric": a.metric, "weight_by_size": bool(a.weight_by_size)}
                for a in (group.aggregate_metric_list or [])
            ],
            "yaml": yaml_path,
            "yaml_sha256": yaml_sha256,
        }
    exports.append({"name": name, "tasks": list(found["tasks"]), "groups": list(found["groups"])})

skeleton = {key: results.get(key) for key in ("configs", "versions", "n-shot", "higher_is_better", "n-samples")}
# A config names its functions by repr, with an address that differs from one
# process to the next: without it, an export is the same each time.
skeleton = json.loads(re.sub(r" at 0x[0-9a-fA-F]+>", ">", json.dumps(skeleton, ensure_ascii=False, default=str)))
json.dump(
    {
        "lm_eval_version": getattr(lm_eval, "__version__", None),
        "python": ".".join(map(str, sys.version_info[:3])),
        "exports": exports,
        "tasks": out_tasks,
        "groups": groups,
        "skeleton": skeleton,
    },
    export,
    ensure_ascii=False,
    default=str,
)
export.close()
