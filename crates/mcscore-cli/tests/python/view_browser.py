"""Opens `mcscore view` pages in a real headless Chromium (Debian's, driven by
Selenium over chromedriver), from file:// with the network switched off, and
checks them against numbers computed here from the sample logs themselves and
against `compare --json` / `report --json`.

  view_browser.py check PAGE CASE.json SHOTS_DIR   (CASE: logs, compare, report)
  view_browser.py hostile PAGE CASE.json           (text that tries to run script: CASE has it)
  view_browser.py schemes PAGE REPORT.json         (the schemes view against `schemes --json`)
  view_browser.py images PAGE CASE.json            (a VQA run's thumbnails; CASE: tasks, hostile)
  view_browser.py bench PAGE RESULT.json           (load and filter times)

Fails (exit 1, with the reason) on any console error, any request that is not
the page itself or a data: image, or any number that differs.
"""

import json
import math
import os
import re
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

FLIPS = ["both_right", "right_to_wrong", "wrong_to_right", "both_wrong", "wrong_to_other_wrong"]


def fail(message):
    print(f"view_browser: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def expect(condition, message):
    if not condition:
        fail(message)


class Browser:
    def __init__(self):
        self.profile = tempfile.TemporaryDirectory()
        options = webdriver.ChromeOptions()
        options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-default-apps", "--window-size=1400,1000", f"--user-data-dir={self.profile.name}"]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.emulateNetworkConditions",
                                    {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        # What the browser did before any page of ours (its blank tab).
        self.driver.get_log("browser")
        self.driver.get_log("performance")

    def open(self, page, fragment=""):
        url = "file://" + os.path.abspath(page) + fragment
        self.driver.get(url)
        deadline = time.time() + 60
        while self.js("return window.mcscoreView && window.mcscoreView.readyMs") is None:
            expect(time.time() < deadline, f"{page}: the page's script never finished (window.mcscoreView.readyMs)")
            time.sleep(0.05)
        self.page_url = "file://" + os.path.abspath(page)
        return self.js("return window.mcscoreView.readyMs")

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def check_clean(self, where):
        """No console message of level warning or worse, no request but the page and data: images."""
        for entry in self.driver.get_log("browser"):
            expect(entry["level"] not in ("SEVERE", "WARNING"), f"{where}: console: {entry['message']}")
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] != "Network.requestWillBeSent":
                continue
            url = message["params"]["request"]["url"]
            expect(url.startswith(self.page_url) or url.startswith("data:"), f"{where}: a network request: {url}")

    def by_id(self, id):
        return self.driver.find_element(By.ID, id)

    def set_hash(self, fragment):
        """Sets the fragment and waits until the page has redrawn for it."""
        before = self.js("return window.mcscoreView.updates")
        self.js("location.hash = arguments[0]", fragment)
        deadline = time.time() + 10
        while self.js("return window.mcscoreView.updates") == before:
            expect(time.time() < deadline, f"the page did not redraw for {fragment}")
            time.sleep(0.01)

    def count(self):
        return int(self.by_id("count").get_attribute("data-count"))

    def choose(self, select_id, value):
        self.js("const s = document.getElementById(arguments[0]); s.value = arguments[1]; s.dispatchEvent(new Event('change'));", select_id, value)

    def key(self, key):
        self.driver.find_element(By.TAG_NAME, "body").send_keys(key)

    def shown_tasks(self):
        return [int(li.get_attribute("data-row")) for li in self.driver.find_elements(By.CSS_SELECTOR, "#task-list li")]

    def detail_task(self):
        return self.by_id("detail-title").text.split()[1]

    def close(self):
        self.driver.quit()


def read_log(path):
    tasks = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record["type"] == "task":
                tasks.append(record)
    return tasks


def margin(task):
    """Top probability less the second under acc_norm, as the page rounds it."""
    scores = [o["logprob_sum"] / o["tokens"] for o in task["options"]]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    probs = sorted((e / total for e in exps), reverse=True)
    second = probs[1] if len(probs) > 1 else 0.0
    return round((probs[0] - second) * 10000)


def flip(b, o):
    br, orr = b["correct"]["acc_norm"], o["correct"]["acc_norm"]
    if br and not orr:
        return "right_to_wrong"
    if orr and not br:
        return "wrong_to_right"
    if br:
        return "both_right"
    return "both_wrong" if b["pred"]["acc_norm"] == o["pred"]["acc_norm"] else "wrong_to_other_wrong"


def check(page, case_path, shots):
    case = json.load(open(case_path))
    logs = [read_log(p) for p in case["logs"]]
    compare, report = case["compare"], case["report"]
    base = logs[0]
    n = len(base)
    b = Browser()
    ready = b.open(page)
    b.check_clean("load")
    expect(b.by_id("compare").is_displayed(), "the page with a comparison opens on it")
    answer = b.by_id("answer").text
    for other in compare["others"]:
        expect(other["conclusion"] in answer and other["other"]["label"] in answer, f"the first lines answer for {other['other']['label']}: {answer!r}")
    b.driver.save_screenshot(os.path.join(shots, "compare.png"))

    # Every flip cell shows compare --json's count, and the logs' own.
    cells = b.driver.find_elements(By.CSS_SELECTOR, "a.flip-cell")
    expect(len(cells) == 5 * len(compare["others"]), f"{len(cells)} flip cells for {len(compare['others'])} OTHERs")
    for o, other in enumerate(compare["others"], start=1):
        mine = {kind: [i for i in range(n) if flip(base[i], logs[o][i]) == kind] for kind in FLIPS}
        for kind in FLIPS:
            cell = b.driver.find_element(By.CSS_SELECTOR, f"a.flip-cell[data-other='{o}'][data-flip='{kind}']")
            expect(int(cell.text) == other["flips"][kind] == len(mine[kind]),
                   f"OTHER {o} {kind}: the page shows {cell.text}, compare --json {other['flips'][kind]}, the logs {len(mine[kind])}")
    # A cell's link lists exactly its tasks; j opens the first.
    o, kind = 1, max(FLIPS[1:3], key=lambda k: compare["others"][0]["flips"][k])
    expected = [i for i in range(n) if flip(base[i], logs[o][i]) == kind]
    b.driver.find_element(By.CSS_SELECTOR, f"a.flip-cell[data-other='{o}'][data-flip='{kind}']").click()
    time.sleep(0.1)
    expect(b.by_id("tasks").is_displayed(), "a flip cell opens the task browser")
    expect(b.count() == len(expected), f"the {kind} cell lists {b.count()} tasks, the logs have {len(expected)}")
    expect(b.shown_tasks()[:200] == expected[:200], f"the {kind} cell lists other tasks than the logs' {kind} tasks")
    b.key("j")
    first = base[expected[0]]["task"]
    expect(b.detail_task() == str(first), f"j after the {kind} cell opens task {b.detail_task()}, not {first}")

    # Each filter's count equals the logs' (run 0 = BASE, against OTHER 1).
    right = [i for i in range(n) if base[i]["correct"]["acc_norm"]]
    low = [i for i in range(n) if margin(base[i]) < 1000]
    flipped = [i for i in range(n) if flip(base[i], logs[1][i]) in ("right_to_wrong", "wrong_to_right")]
    acc_norm = report["models"][0]["normalisations"]["acc_norm"]["mean"]
    expect(abs(len(right) / n - acc_norm) < 1e-12, f"report --json's acc_norm {acc_norm} against the log's {len(right)}/{n}")
    timings = []
    for name, rows in [("all", range(n)), ("right", right), ("wrong", [i for i in range(n) if i not in set(right)]), ("low-margin", low), ("flipped", flipped)]:
        b.set_hash(f"#view=tasks&filter={name}")
        expect(b.count() == len(rows), f"filter {name}: the page counts {b.count()}, the logs {len(rows)}")
        timings.append(b.js("return window.mcscoreView.filterMs"))
    expect(max(timings) < 200, f"a filter took {max(timings):.0f} ms")

    # Search by text.
    needle = case["search"]
    lowered = case["texts"]
    matching = [i for i in range(n) if needle in lowered[i]]
    b.set_hash("#view=tasks")
    search = b.by_id("q")
    search.send_keys(needle)
    time.sleep(0.1)
    expect(b.count() == len(matching), f"search {needle!r}: the page counts {b.count()}, the task file {len(matching)}")
    search.clear()
    b.js("document.getElementById('q').dispatchEvent(new Event('input'))")

    # Keyboard: j j j k, and the fragment keeps the selection across a reload.
    b.set_hash("#view=tasks&sort=margin-asc")
    b.js("document.activeElement.blur()")
    for key in "jjjk":
        b.key(key)
    order = sorted(range(n), key=lambda i: (margin(base[i]), i))
    expect(b.detail_task() == str(base[order[1]]["task"]), f"j j j k by margin opens task {b.detail_task()}, not {base[order[1]]['task']}")
    fragment = b.js("return location.hash")
    expect(f"task={base[order[1]]['task']}" in fragment, f"the fragment {fragment!r} keeps the selection")
    # The marks and the margin box say what they are.
    legend = b.by_id("marks-legend").text
    expect(legend.startswith("marks: ✓ right, ✗ wrong") and all(r["label"] in legend for r in report["models"]), f"marks legend {legend!r}")
    expect(b.js("return document.querySelector('label[for=below]').textContent") == "margin below", "the margin box has a label")
    b.driver.save_screenshot(os.path.join(shots, "tasks.png"))
    b.open(page, fragment)
    expect(b.detail_task() == str(base[order[1]]["task"]), f"the shared link {fragment!r} opens task {b.detail_task()}")

    # The scoreboard shows report --json's numbers.
    b.set_hash("#view=scores")
    text = b.by_id("scores").text
    for model in report["models"]:
        for name, estimate in model["normalisations"].items():
            expect(f"{100 * estimate['mean']:.2f} [{100 * estimate['low']:.2f}, {100 * estimate['high']:.2f}]" in text, f"{model['label']} {name} {estimate} is not on the scoreboard")
    expect(len(b.driver.find_elements(By.CSS_SELECTOR, "#scores img")) >= len(report["models"]), "a reliability diagram per model")
    b.driver.save_screenshot(os.path.join(shots, "scores.png"))
    if case.get("sweep"):
        b.set_hash("#view=sweep")
        heat = b.driver.find_elements(By.CSS_SELECTOR, "#sweep table.heat td.cell")
        sweep = case["sweep"]
        # The original order's accuracy per model, and circular accuracy beside it only where some format has any.
        circular = [f.get("circular_accuracy") or 0 for m in sweep["models"] for f in m["formats"]]
        kinds = 2 if sweep.get("circular") and any(c > 0 for c in circular) else 1
        expect(len(heat) == len(sweep["formats"]) * len(sweep["models"]) * kinds, f"{len(heat)} heat map cells, {kinds} kind(s)")
        # A saved sweep gives fractions (schema_version 2); the page, points.
        accuracy = sweep["models"][0]["formats"][0]["accuracy"] * (100 if sweep.get("schema_version") else 1)
        expect(heat[0].text == f"{accuracy:.2f}", f"heat map cell {heat[0].text}, saved {accuracy}")
        b.driver.save_screenshot(os.path.join(shots, "sweep.png"))
    b.check_clean("after every view")
    b.close()
    print(json.dumps({"ready_ms": ready, "filter_ms_max": max(timings)}))


def hostile(page, case_path):
    """Every payload is on the page as the exact text it is, and none ran."""
    case = json.load(open(case_path))
    b = Browser()
    b.open(page, "#view=tasks")
    text = lambda id: b.js("return document.getElementById(arguments[0]).textContent", id)
    expect(case["label"] in text("answer"), f"the model's label {case['label']!r} is shown as text: {text('answer')!r}")
    expect(len(b.shown_tasks()) == len(case["questions"]), "the hostile page lists its tasks")
    options = case["options"]  # every task has the same options
    for question, group in zip(case["questions"], case["groups"]):
        b.key("j")
        expect(text("question") == question, f"the question is shown as text: {text('question')!r}, not {question!r}")
        shown = b.js("return [...document.querySelectorAll('.option-text')].map(e => e.textContent)")
        expect(shown == options * 2, f"the options are shown as text: {shown!r}")
        expect(f"group: {group}" in text("task-detail"), f"the group {group!r} is shown as text")
    groups = b.js("return [...document.querySelectorAll('#group option')].map(e => e.textContent)")
    expect(sorted(groups[1:]) == sorted(set(case["groups"])), f"the group filter lists {groups!r}")
    for view in ["compare", "scores"]:
        b.set_hash(f"#view={view}")
    # Fragments edited by hand: out of range, not numbers, not a view.
    for fragment in ["#view=tasks&other=1.5&run=-1&filter=right", "#view=nothing&task=abc", "#view=tasks&group=99&k=x&sort=kl-desc"]:
        b.set_hash(fragment)
    try:
        alert = b.driver.switch_to.alert
        fail(f"an alert ran: {alert.text}")
    except NoAlertPresentException:
        pass
    expect(b.js("return window.__pwned === undefined"), f"text ran script (window.__pwned = {b.js('return window.__pwned')})")
    expect(len(b.driver.find_elements(By.CSS_SELECTOR, "main script, main img:not([src^='data:']), main iframe, main b, main svg")) == 0,
           "text became elements")
    b.check_clean("hostile page")
    b.close()


def images(page, case_path):
    """Each task's images are shown, decoded, in order, at their size (at most
    192 px a side), captioned with their sha256; a hostile question is text."""
    case = json.load(open(case_path))
    b = Browser()
    b.open(page, "#view=tasks")
    text = lambda id: b.js("return document.getElementById(arguments[0]).textContent", id)
    for task in case["tasks"]:
        b.set_hash(f"#view=tasks&task={task['index']}")
        expect(task["question"] in text("question"), f"task {task['index']}: the question {task['question']!r} is not shown as text: {text('question')!r}")
        shown = b.js("""return [...document.querySelectorAll('#images figure')].map(f => {
            const img = f.querySelector('img');
            return {complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
                    src: img.getAttribute('src').slice(0, 23), caption: f.querySelector('figcaption').textContent, title: f.querySelector('figcaption').title}; })""")
        expect(len(shown) == len(task["images"]), f"task {task['index']}: {len(shown)} images shown, not {len(task['images'])}")
        for n, (img, sha256, size) in enumerate(zip(shown, task["images"], task["sizes"])):
            where = f"task {task['index']}, image {n}"
            expect(img["src"] == "data:image/jpeg;base64,", f"{where}: not a data: JPEG ({img['src']!r})")
            expect(img["complete"] and img["width"] > 0, f"{where}: the thumbnail did not decode")
            scale = min(1, 192 / max(size))
            want = [max(1, round(side * scale)) for side in size]
            expect(abs(img["width"] - want[0]) <= 1 and abs(img["height"] - want[1]) <= 1,
                   f"{where}: shown {img['width']} x {img['height']}, not {want[0]} x {want[1]}")
            expect(img["caption"].startswith(f"image {n}: {size[0]} × {size[1]} px, sha256 {sha256[:12]}"), f"{where}: caption {img['caption']!r}")
            expect(img["title"] == sha256, f"{where}: the caption's title is {img['title']!r}, not the whole sha256")
    expect(b.js("return window.__pwned === undefined"), f"text ran script (window.__pwned = {b.js('return window.__pwned')})")
    expect(len(b.driver.find_elements(By.CSS_SELECTOR, "main script, main img:not([src^='data:']), main iframe, main b, main svg")) == 0,
           "text became elements")
    b.check_clean("images page")
    b.close()


def baseline_page(page):
    """The page's bytes with its script replaced by one that only parses the data."""
    html = open(page, encoding="utf-8").read()
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    start = html.rindex("<script>")
    end = html.index("</script>", start)
    script = ("window.mcscoreView = {readyMs: null}; JSON.parse(document.getElementById('mcscore-data').textContent);"
              " JSON.parse(document.getElementById('mcscore-plots').textContent); window.mcscoreView.readyMs = performance.now();")
    path = page + ".baseline.html"
    open(path, "w", encoding="utf-8").write(html[:start] + "<script>" + script + html[end:])
    return path


def schemes(page, report_path):
    """The schemes view shows `mcscore schemes --json`'s numbers."""
    with open(report_path) as f:
        report = json.load(f)
    browser = Browser()
    try:
        browser.open(page)
        browser.check_clean(page)
        expect(browser.js("return location.hash") in ("", "#"), "the schemes view is the page's default")
        expect(not browser.by_id("schemes").get_attribute("hidden"), "the schemes section is shown")
        tables = browser.driver.find_elements(By.CSS_SELECTOR, "#schemes table")
        expect(len(tables) >= len(report["models"]), f"{len(tables)} tables for {len(report['models'])} models")
        for model, table in zip(report["models"], tables):
            rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
            expect(len(rows) == len(model["modes"]), f"{model['label']}: {len(rows)} rows for {len(model['modes'])} modes")
            for figures, row in zip(model["modes"], rows):
                cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
                expect(cells[0] == figures["mode"], f"row {cells[0]} for {figures['mode']}")
                if figures["mode"] in ("NR", "NR-Var"):
                    shown = f"{100 * figures['prompted']['mean']:.2f} %"
                else:
                    shown = f"{figures['prompted']['mean']:.3f} "
                expect(cells[1].startswith(shown), f"{figures['mode']}: the page shows {cells[1]!r}, the report {shown!r}")
                parses = figures["parses"]
                expect(cells[5] == f"{parses['strict']} / {parses['loose']} / {parses['forced']} / {parses['unparsed']}", f"{figures['mode']}: parses {cells[5]!r}")
        answer = browser.by_id("answer").text
        expect("NR prompted" in answer, f"the answer line: {answer!r}")
        browser.check_clean(page)
        print(f"schemes view: {len(report['models'])} models checked")
    finally:
        browser.close()


def bench(page, result_path):
    b = Browser()
    baseline = baseline_page(page)
    loads, base_loads = [], []
    for _ in range(5):  # A B A B …: medians of five
        base_loads.append(b.open(baseline))
        loads.append(b.open(page))
    b.check_clean("load")
    times = {}
    for name in ["all", "right", "wrong", "low-margin", "flipped", "flip:right_to_wrong"]:
        samples = []
        for _ in range(3):
            b.set_hash("#view=scores")
            b.set_hash(f"#view=tasks&filter={name}")
            samples.append(b.js("return window.mcscoreView.filterMs"))
        times[name] = sorted(samples)[1]  # the median of three
    b.set_hash("#view=tasks")
    for needle, name in [("the", "search 'the' (first: lowercases every task once)"), ("water", "search 'water'")]:
        b.js("const q = document.getElementById('q'); q.value = arguments[0]; q.dispatchEvent(new Event('input'));", needle)
        times[name] = b.js("return window.mcscoreView.filterMs")
    b.check_clean("bench")
    b.close()
    result = {"page_bytes": os.path.getsize(page), "ready_ms": sorted(loads)[2], "ready_ms_runs": loads, "baseline_ready_ms": sorted(base_loads)[2],
              "baseline_ready_ms_runs": base_loads, "filter_ms_median": times}
    json.dump(result, open(result_path, "w"), indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "hostile":
        hostile(sys.argv[2], sys.argv[3])
    elif mode == "schemes":
        schemes(sys.argv[2], sys.argv[3])
    elif mode == "images":
        images(sys.argv[2], sys.argv[3])
    elif mode == "bench":
        bench(sys.argv[2], sys.argv[3])
    else:
        fail(f"unknown mode {mode}")
