#!/usr/bin/env python3
"""Load test for `mcscore serve` (used by scripts/bench-serve): CLIENTS
concurrent clients send one request per task of a task file, each the task's
options as prompts (question + " " + option) with echo, logprobs 1 and one
greedy token, as lm-eval's local-completions does. Every request must get 200
or 503 (with Retry-After); prints one JSON line: statuses, wall time, p50/p99
latency, prompts and tokens per second. Standard library only."""
import json, struct, sys, threading, time, urllib.error, urllib.request

def tasks(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<I", data, 0)[0]
    offsets = struct.unpack_from(f"<{n}I", data, 4)
    out = []
    for start in offsets:
        pos = start
        def string():
            nonlocal pos
            size = struct.unpack_from("<I", data, pos)[0]
            pos += 4
            text = data[pos:pos + size].decode()
            pos += size
            return text
        question = string()
        count = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        out.append([f"{question} {string()}" for _ in range(count)])
    return out

ECHO = "--no-echo" not in sys.argv

def main():
    url, path, clients = sys.argv[1], sys.argv[2], int(sys.argv[3])
    work = tasks(path)
    lock = threading.Lock()
    results, next_task = [], [0]
    def client():
        while True:
            with lock:
                if next_task[0] >= len(work):
                    return
                prompts = work[next_task[0]]
                next_task[0] += 1
            body = json.dumps({"prompt": prompts, "max_tokens": 1, "echo": ECHO, "logprobs": 1, "temperature": 0}).encode()
            request = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
            sent = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=600) as reply:
                    answer = json.load(reply)
                    status, tokens = reply.status, answer["usage"]["prompt_tokens"]
            except urllib.error.HTTPError as e:
                status, tokens = e.code, 0
                assert status != 503 or e.headers.get("Retry-After"), "a 503 without Retry-After"
            with lock:
                results.append((status, time.monotonic() - sent, len(prompts), tokens))
    started = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    statuses = {}
    for status, *_ in results:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    assert len(results) == len(work), f"{len(work) - len(results)} requests lost"
    assert set(statuses) <= {"200", "503"}, statuses
    latencies = sorted(r[1] for r in results if r[0] == 200)
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * (len(latencies) - 1) + 0.5))]
    print(json.dumps({
        "requests": len(results), "statuses": statuses, "wall_s": round(wall, 3),
        "p50_ms": round(pick(0.5) * 1e3, 1), "p99_ms": round(pick(0.99) * 1e3, 1),
        "prompts_per_s": round(sum(r[2] for r in results if r[0] == 200) / wall, 2),
        "tokens_per_s": round(sum(r[3] for r in results) / wall, 1),
    }))

main()
