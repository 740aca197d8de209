#!/usr/bin/python3
"""Turns the AI service's trace into a timeline.

    trace.py LOG [--json OUT.json] [--png OUT.png] [--title TEXT] [--summary] [--handoffs] [--widths]

LOG is a console transcript (or a file) holding the lines /bin/aitrace
prints, one per event of the kernel's trace ring (<kai/ai_trace.h>):

    ev SEQ T_NS INSTRET HART NAME [req=ID] ARG=VALUE ...

Everything else in LOG is ignored. A transcript holds one trace: if the same
event number appears twice (the ring was printed twice), the first copy
counts.

--json writes Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
chrome://tracing open: one track per AI worker with its iterations (and the
requests in each as arguments), one track per request with its queued,
prefill and decode phases, one track per row-team part when parts were
traced, counters for the queue length, the running requests and the KV
blocks in use, and a flow arrow from each request's submission to the first
iteration that computed it. Slices on one track nest, as Perfetto requires.

--png draws the same story with matplotlib: one row per request, time
across, each phase coloured, preemptions and prefix-cache hits marked; the
KV blocks in use and the queue length underneath.

--summary prints, per request, what the trace says about it: tokens, TTFT,
end-to-end time and finish reason (the same quantities as kai_ai_result).

--handoffs prints, from the `parts` class, where each row team's time went:
inside its jobs or between them (the worker alone), how late the second
hart joined a job, how far apart the harts finished it, and how many jobs
ran on one hart only (a width-control probe, or a helper that slept).

--widths prints, from the WIDTH events (the `iterations` class), each row
team's measuring windows: the width each ran at, its picoseconds per
multiply-add against the reference, and the verdict (reference, won,
adopted, lost, unjudged); then, per width, how many windows ran at it and
their median speed. It shows why a team settled where it did. A team's
boot-time survey (a stand-in job timed at every width before the first
request) comes first, on lines of its own: its figures are picoseconds per
step of that job, not per multiply-add.

Times are the kernel's clock_ns(): virtual time in exact mode (one
instruction = 1 ns), real time otherwise. docs/trace.md,
lists the events.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import latency  # noqa: E402
from benchlib.latency import median, percentile  # noqa: E402
from benchlib.plots import pyplot, save_png  # noqa: E402

EVENT = re.compile(r"^ev (\d+) (\d+) (\d+) (\d+) ([A-Z_0-9]+)((?: [a-z_0-9]+=\d+)*)\s*$")

FINISH_NAMES = {0: "none", 1: "length", 2: "eos", 3: "stop", 4: "cancelled", 5: "failed"}
POLICY_NAMES = {0: "fcfs", 1: "sjf", 2: "priority"}
PHASE_PREFILL, PHASE_DECODE = 1, 2
LOAD_PHASES = {1: "probed", 2: "weights", 3: "ready", 4: "failed"}
WIDTH_VERDICTS = {1: "reference", 2: "won", 3: "adopted", 4: "lost", 5: "unjudged", 6: "survey", 7: "surveyed"}
WIDTH_SURVEY, WIDTH_SURVEYED = 6, 7


class Event:
    __slots__ = ("seq", "t", "instret", "hart", "name", "req", "args")

    def __init__(self, seq, t, instret, hart, name, req, args):
        self.seq, self.t, self.instret, self.hart = seq, t, instret, hart
        self.name, self.req, self.args = name, req, args

    def __getitem__(self, key):
        return self.args[key]

    def __repr__(self):
        return f"Event({self.seq}, {self.t}, {self.name}, req={self.req}, {self.args})"


def parse(text):
    """The events of a transcript, in event-number order."""
    seen = {}
    for line in text.splitlines():
        m = EVENT.match(line.strip("\r"))
        if not m:
            continue
        seq = int(m.group(1))
        if seq in seen:
            continue
        args = {}
        for pair in m.group(6).split():
            k, v = pair.split("=")
            args[k] = int(v)
        req = args.pop("req", 0)
        seen[seq] = Event(seq, int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5), req, args)
    return [seen[s] for s in sorted(seen)]


class Request:
    """One request's life as the trace tells it."""

    def __init__(self, rid):
        self.id = rid
        self.submit = None          # t of SUBMIT
        self.prompt = self.predict = 0
        self.admits = []            # t of each ADMIT (more than one after a preemption)
        self.preempts = []          # t of each PREEMPT
        self.tokens = []            # (t, token id)
        self.finish = None          # t of FINISH
        self.reason = None          # KAI_AI_FINISH_* number
        self.generated = 0
        self.prefix_tokens = 0      # prompt tokens found in the prefix cache
        self.prefix_hits = []       # t of each PREFIX_HIT
        self.first_iteration = None  # (worker track, t) of the first ITER_BEGIN that fed it
        self.iterations = 0
        self.worker = None

    @property
    def ttft_ns(self):
        return latency.ttft_ns(self.submit, self.tokens[0][0]) if self.tokens and self.submit is not None else None

    @property
    def e2e_ns(self):
        done = self.finish is not None and self.submit is not None
        return latency.e2e_ns(self.submit, self.finish) if done else None

    @property
    def reason_name(self):
        return FINISH_NAMES.get(self.reason, str(self.reason))

    def phases(self):
        """[(name, start, end)]: queued until admitted, then prefill until
        the next token is published, then decode; a preemption sends it
        back to the queue, and its recomputation is a prefill again. Ends
        at FINISH (or the last event seen)."""
        out = []
        if self.submit is None:
            return out
        end = self.finish
        if end is None:
            times = [t for t, _ in self.tokens] + self.admits + self.preempts + [self.submit]
            end = max(times)
        marks = [(t, "admit") for t in self.admits] + [(t, "preempt") for t in self.preempts]
        marks += [(t, "token") for t, _ in self.tokens]
        marks.sort(key=lambda x: (x[0], {"preempt": 0, "admit": 1, "token": 2}[x[1]]))
        state, since = "queued", self.submit
        for t, what in marks:
            new = state
            if what == "admit":
                new = "prefill"
            elif what == "preempt":
                new = "queued"
            elif what == "token" and state == "prefill":
                new = "decode"
            if new != state:
                if t > since:
                    out.append((state, since, t))
                state, since = new, t
        if end > since:
            out.append((state, since, end))
        return out


class Trace:
    """Everything tools and tests read from a list of events."""

    def __init__(self, events):
        self.events = events
        self.requests = {}
        self.iterations = []        # dicts: worker, t0, t1, requests, tokens, budget, max_batch, items
        self.parts = []             # (worker, part, hart, t0, t1)
        self.loads = []             # (model, phase name, t)
        self.kv_used = []           # (t, blocks in use, all pools)
        self.window = None
        self._build()

    def request(self, rid):
        if rid not in self.requests:
            self.requests[rid] = Request(rid)
        return self.requests[rid]

    def _build(self):
        open_iter = {}
        open_part = {}
        kv_by_model = {}
        for e in self.events:
            n = e.name
            if n == "SUBMIT":
                r = self.request(e.req)
                r.submit, r.prompt, r.predict = e.t, e["prompt"], e["predict"]
            elif n == "ADMIT":
                r = self.request(e.req)
                r.admits.append(e.t)
                r.worker = e["worker"]
            elif n == "PREEMPT":
                self.request(e.req).preempts.append(e.t)
            elif n == "FINISH":
                r = self.request(e.req)
                r.finish, r.reason, r.generated = e.t, e["reason"], e["generated"]
            elif n == "TOKEN":
                self.request(e.req).tokens.append((e.t, e["token"]))
            elif n == "PREFIX_HIT":
                r = self.request(e.req)
                r.prefix_tokens += e["tokens"]
                r.prefix_hits.append(e.t)
            elif n == "ITER_BEGIN":
                it = {"worker": e["worker"], "t0": e.t, "t1": None, "hart": e.hart, "i0": e.instret, "instructions": None,
                  "requests": e["requests"],
                      "tokens": e["tokens"], "budget": e["budget"], "max_batch": e["max_batch"], "items": []}
                open_iter[e["worker"]] = it
                self.iterations.append(it)
            elif n == "ITEM":
                it = open_iter.get(e["worker"])
                if it is not None:
                    it["items"].append({"request": e.req, "phase": e["phase"], "first": e["first"],
                                        "count": e["count"]})
                    r = self.request(e.req)
                    r.iterations += 1
                    if r.first_iteration is None:
                        r.first_iteration = (e["worker"], it["t0"])
            elif n == "ITER_END":
                it = open_iter.pop(e["worker"], None)
                if it is not None:
                    it["t1"] = e.t
                    if e.hart == it["hart"]:   # instret counts per hart
                        it["instructions"] = e.instret - it["i0"]
            elif n == "PART_BEGIN":
                open_part[(e["worker"], e["part"])] = e
            elif n == "PART_END":
                b = open_part.pop((e["worker"], e["part"]), None)
                if b is not None:
                    self.parts.append((e["worker"], e["part"], b.hart, b.t, e.t))
            elif n in ("KV_TAKE", "KV_FREE", "KV_EVICT"):
                kv_by_model[e["model"]] = e["used"]
                self.kv_used.append((e.t, sum(kv_by_model.values())))
            elif n == "LOAD":
                self.loads.append((e["model"], LOAD_PHASES.get(e["phase"], str(e["phase"])), e.t))
        # An iteration whose end was not seen (the ring was read mid-way) is dropped.
        self.iterations = [it for it in self.iterations if it["t1"] is not None]
        submits = [r.submit for r in self.requests.values() if r.submit is not None]
        finishes = [r.finish for r in self.requests.values() if r.finish is not None]
        if submits and finishes:
            self.window = (min(submits), max(finishes))

    def complete_requests(self):
        """Requests whose submission and end are both in the trace."""
        return [r for r in sorted(self.requests.values(), key=lambda r: r.id)
                if r.submit is not None and r.finish is not None]

    def counters(self):
        """[(t, queued, running)] after each change, from the request events
        alone (SUBMIT, ADMIT, PREEMPT, FINISH)."""
        state = {}
        queued = running = 0
        out = []
        for e in self.events:
            if e.name == "SUBMIT":
                state[e.req] = "q"
                queued += 1
            elif e.name == "ADMIT" and state.get(e.req) == "q":
                state[e.req] = "r"
                queued -= 1
                running += 1
            elif e.name == "PREEMPT" and state.get(e.req) == "r":
                state[e.req] = "q"
                running -= 1
                queued += 1
            elif e.name == "FINISH" and e.req in state:
                if state.pop(e.req) == "q":
                    queued -= 1
                else:
                    running -= 1
            else:
                continue
            out.append((e.t, queued, running))
        return out

    def littles_law(self):
        """(L, lambda, W) over the window from the first submission to the
        last end: L the time-average number of requests in the system
        (queued or running, integrated from the counters), lambda the
        completions per ns, W the mean time in the system per request."""
        if self.window is None:
            return None
        t0, t1 = self.window
        area, last_t, last_n = 0, t0, 0
        for t, q, r in self.counters():
            if t < t0 or t > t1:
                continue
            area += last_n * (t - last_t)
            last_t, last_n = t, q + r
        area += last_n * (t1 - last_t)
        done = [r for r in self.complete_requests() if t0 <= r.submit and r.finish <= t1]
        span = t1 - t0
        if span <= 0 or not done:
            return None
        lam = len(done) / span
        w = sum(r.e2e_ns for r in done) / len(done)
        return area / span, lam, w


# ---------------------------------------------------------------- Chrome JSON

PID = 1
WORKER_TID = 100        # + worker
PART_TID = 200          # + 10 * worker + part
REQUEST_TID = 1000      # + request id
LOADER_TID = 50


def _us(ns):
    return ns / 1000.0


def chrome_events(tr):
    out = [{"ph": "M", "pid": PID, "name": "process_name", "args": {"name": "kai AI service"}}]

    def thread(tid, name, order):
        out.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": name}})
        out.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": order}})

    def slice_(tid, name, t0, t1, cat, args=None):
        ev = {"ph": "X", "pid": PID, "tid": tid, "name": name, "cat": cat, "ts": _us(t0), "dur": _us(t1 - t0)}
        if args:
            ev["args"] = args
        out.append(ev)

    workers = sorted({it["worker"] for it in tr.iterations})
    for w in workers:
        thread(WORKER_TID + w, f"worker {w}", WORKER_TID + w)
    for it in tr.iterations:
        prefill = sum(i["count"] for i in it["items"] if i["phase"] == PHASE_PREFILL)
        decode = sum(i["count"] for i in it["items"] if i["phase"] == PHASE_DECODE)
        name = f"iteration: {it['requests']} req, {prefill} prefill + {decode} decode"
        args = {"requests": it["requests"], "tokens": it["tokens"], "budget": it["budget"],
                "instructions": it["instructions"],
                "max_batch": it["max_batch"],
                "items": [f"req {i['request']} {'prefill' if i['phase'] == PHASE_PREFILL else 'decode'} "
                          f"@{i['first']} x{i['count']}" for i in it["items"]]}
        slice_(WORKER_TID + it["worker"], name, it["t0"], it["t1"], "iteration", args)

    for (w, p) in sorted({(w, p) for w, p, _, _, _ in tr.parts}):
        thread(PART_TID + 10 * w + p, f"worker {w} rows part {p}", PART_TID + 10 * w + p)
    for w, p, hart, t0, t1 in tr.parts:
        slice_(PART_TID + 10 * w + p, f"rows on hart {hart}", t0, t1, "part", {"hart": hart})

    if tr.loads:
        thread(LOADER_TID, "model loader", LOADER_TID)
        starts = {}
        for model, phase, t in tr.loads:
            if phase == "weights":
                starts[model] = t
            elif phase in ("ready", "failed") and model in starts:
                slice_(LOADER_TID, f"load model {model}", starts.pop(model), t, "load", {"outcome": phase})
            else:
                out.append({"ph": "i", "s": "t", "pid": PID, "tid": LOADER_TID, "name": f"model {model} {phase}",
                            "ts": _us(t)})

    for r in sorted(tr.requests.values(), key=lambda r: r.id):
        if r.submit is None:
            continue
        tid = REQUEST_TID + r.id
        thread(tid, f"request {r.id}", tid)
        phases = r.phases()
        end = r.finish if r.finish is not None else (phases[-1][2] if phases else r.submit)
        args = {"prompt": r.prompt, "predict": r.predict, "generated": len(r.tokens),
                "finish": r.reason_name if r.finish is not None else "(not finished in the trace)",
                "prefix_tokens": r.prefix_tokens, "preemptions": len(r.preempts)}
        if r.ttft_ns is not None:
            args["ttft_ms"] = r.ttft_ns / 1e6
        slice_(tid, f"request {r.id}", r.submit, end, "request", args)
        for name, t0, t1 in phases:
            slice_(tid, name, t0, t1, "phase")
        for t in r.preempts:
            out.append({"ph": "i", "s": "t", "pid": PID, "tid": tid, "name": "preempted", "ts": _us(t)})
        for t in r.prefix_hits:
            out.append({"ph": "i", "s": "t", "pid": PID, "tid": tid, "name": "prefix hit", "ts": _us(t),
                        "args": {"tokens": r.prefix_tokens}})
        if r.first_iteration is not None:
            w, t_iter = r.first_iteration
            # A flow arrow from the submission (inside the request's slice)
            # to the first iteration that computed it (inside that slice).
            out.append({"ph": "s", "pid": PID, "tid": tid, "id": r.id, "name": "submit to first iteration",
                        "cat": "flow", "ts": _us(r.submit)})
            out.append({"ph": "f", "bp": "e", "pid": PID, "tid": WORKER_TID + w, "id": r.id,
                        "name": "submit to first iteration", "cat": "flow", "ts": _us(t_iter)})

    for t, q, running in tr.counters():
        out.append({"ph": "C", "pid": PID, "name": "requests", "ts": _us(t), "args": {"queued": q, "running": running}})
    for t, used in tr.kv_used:
        out.append({"ph": "C", "pid": PID, "name": "KV blocks in use", "ts": _us(t), "args": {"blocks": used}})
    return out


def write_json(tr, path):
    with open(path, "w") as f:
        json.dump({"traceEvents": chrome_events(tr), "displayTimeUnit": "ms",
                   "otherData": {"clock": "kernel clock_ns()"}}, f)


def check_nesting(trace_events):
    """Problems with the slices of a Chrome trace: on each track, two slices
    must be disjoint or one inside the other. Returns a list of messages."""
    tracks = {}
    for e in trace_events:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    problems = []
    eps = 1e-6
    for key, slices in tracks.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s in slices:
            if s[1] < s[0]:
                problems.append(f"track {key}: slice {s[2]} ends before it starts")
            while stack and stack[-1][1] <= s[0] + eps:
                stack.pop()
            if stack and s[1] > stack[-1][1] + eps:
                problems.append(f"track {key}: {s[2]} [{s[0]}, {s[1]}] overlaps {stack[-1][2]} "
                                f"[{stack[-1][0]}, {stack[-1][1]}]")
            stack.append(s)
    return problems


# ---------------------------------------------------------------- PNG

PHASE_COLOURS = {"queued": "#c8c8c8", "prefill": "#f28e2b", "decode": "#4e79a7"}


def write_png(tr, path, title=None):
    plt = pyplot()
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D

    reqs = [r for r in sorted(tr.requests.values(), key=lambda r: r.id) if r.submit is not None]
    times = [e.t for e in tr.events]
    t_base = min([r.submit for r in reqs] or times or [0])

    def ms(t):
        return (t - t_base) / 1e6

    n = max(len(reqs), 1)
    fig, (ax, ax2) = plt.subplots(2, 1, sharex=True, figsize=(11, 2.2 + 0.28 * n + 2.2),
                                  gridspec_kw={"height_ratios": [max(3, 0.28 * n), 2]})
    for row, r in enumerate(reqs):
        for name, t0, t1 in r.phases():
            ax.barh(row, ms(t1) - ms(t0), left=ms(t0), height=0.7, color=PHASE_COLOURS[name], edgecolor="none")
        if r.tokens:
            ax.plot([ms(t) for t, _ in r.tokens], [row] * len(r.tokens), "|", color="black", markersize=5, alpha=0.5)
        for t in r.preempts:
            ax.plot(ms(t), row, "x", color="red", markersize=8, mew=2)
        for t in r.prefix_hits:
            ax.plot(ms(t), row, "*", color="green", markersize=10)
    ax.margins(x=0.01)
    ax.set_yticks(range(len(reqs)))
    ax.set_yticklabels([f"req {r.id} ({r.prompt}+{r.predict})" for r in reqs], fontsize=7)
    ax.invert_yaxis()
    ax.set_ylabel("requests (prompt+predict)")
    legend = [Patch(color=c, label=k) for k, c in PHASE_COLOURS.items()]
    legend += [Line2D([], [], marker="|", color="black", ls="none", label="token"),
               Line2D([], [], marker="x", color="red", ls="none", mew=2, label="preempted"),
               Line2D([], [], marker="*", color="green", ls="none", label="prefix hit")]
    ax.legend(handles=legend, loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=7, ncol=6, frameon=False)
    if title:
        ax.set_title(title, loc="right", fontsize=9, pad=16)

    counters = tr.counters()
    if counters:
        xs = [ms(t) for t, _, _ in counters]
        ax2.step(xs, [q for _, q, _ in counters], where="post", label="queued", color="#e15759")
        ax2.step(xs, [r for _, _, r in counters], where="post", label="running", color="#59a14f", linewidth=2)
    ax2.set_ylabel("requests")
    ax2.yaxis.get_major_locator().set_params(integer=True)
    if tr.kv_used:
        ax3 = ax2.twinx()
        ax3.step([ms(t) for t, _ in tr.kv_used], [u for _, u in tr.kv_used], where="post", color="#9c755f",
                 linestyle="--", label="KV blocks in use")
        ax3.set_ylim(bottom=0)
        ax3.set_ylabel("KV blocks in use")
        ax3.legend(loc="upper right", fontsize=7)
    ax2.legend(loc="upper left", fontsize=7)
    ax2.set_xlabel("kernel clock, ms since the first submission")
    save_png(fig, path, dpi=110)


def summary_lines(tr):
    lines = ["request prompt generated ttft_us e2e_us finish iterations preemptions prefix_tokens"]
    for r in tr.complete_requests():
        ttft = r.ttft_ns // 1000 if r.ttft_ns is not None else -1
        lines.append(f"{r.id} {r.prompt} {len(r.tokens)} {ttft} {r.e2e_ns // 1000} {r.reason_name} "
                     f"{r.iterations} {len(r.preempts)} {r.prefix_tokens}")
    return lines


def row_jobs(tr):
    """The row-team jobs in the trace, per worker, in order: each a list of
    its parts (worker, part, hart, t0, t1). The next job is posted only
    after every part of this one ended, so in the order they began, a job's
    parts come together, each part number once, and a number seen again
    starts the next job. (Not "part 0 starts a job": parts are claimed in
    order, but a helper that claims part 0 may record its beginning after
    the worker has claimed part 1 and recorded its own.) The trace may begin
    in the middle of a job, so the first job counted is the first whose
    part 0 began after every part before it ended; a last job with fewer
    parts than the others is left out."""
    by_worker = {}
    for part in sorted(tr.parts, key=lambda p: (p[0], p[3])):
        by_worker.setdefault(part[0], []).append(part)
    jobs = {}
    for w, parts in by_worker.items():
        ended = 0
        start = None
        for k, p in enumerate(parts):
            if p[1] == 0 and (k == 0 or p[3] >= ended):
                start = k
                break
            ended = max(ended, p[4])
        if start is None:
            continue
        mine = []
        for p in parts[start:]:
            if not mine or p[1] in {q[1] for q in mine[-1]}:
                mine.append([])
            mine[-1].append(p)
        most = max(len(j) for j in mine)
        if len(mine[-1]) < most:
            mine.pop()
        if mine:
            jobs[w] = mine
    return jobs


def handoff_lines(tr):
    """Where a row team's real time goes, from the `parts` trace class: time
    inside jobs and between them (the worker alone), how late the second
    hart joins a job, and how far apart the harts finish it. The hart in an
    event is the hart a thread ran on, so a job's distinct harts are the
    threads that took part in it."""
    lines = []
    for w, jobs in sorted(row_jobs(tr).items()):
        spans = [(min(p[3] for p in j), max(p[4] for p in j)) for j in jobs]
        total = spans[-1][1] - spans[0][0]
        inside = sum(t1 - t0 for t0, t1 in spans)
        gaps = [spans[k + 1][0] - spans[k][1] for k in range(len(spans) - 1)]
        alone = [j for j in jobs if len({p[2] for p in j}) == 1]
        late, apart = [], []
        for j in jobs:
            first = {}
            last = {}
            for _, _, hart, t0, t1 in j:
                first[hart] = min(first.get(hart, t0), t0)
                last[hart] = max(last.get(hart, t1), t1)
            if len(first) >= 2:
                starts = sorted(first.values())
                ends = sorted(last.values())
                late.append(starts[1] - starts[0])
                apart.append(ends[-1] - ends[-2])
        parts = max(len(j) for j in jobs)
        lines.append(f"worker {w}: {len(jobs)} row-team jobs over {total / 1e6:.1f} ms, up to {parts} parts each")
        if total > 0:
            lines.append(f"  inside jobs {inside / 1e6:.1f} ms ({100 * inside / total:.0f}%), between jobs "
                         f"{sum(gaps) / 1e6:.1f} ms ({100 * sum(gaps) / total:.0f}%: the worker alone)")
        lines.append(f"  between two jobs: median {median(gaps) / 1e3:.1f} us, p90 {percentile(gaps, 90) / 1e3:.1f} us")
        lines.append(f"  jobs run on one hart only: {len(alone)} "
                     f"({sum(max(p[4] for p in j) - min(p[3] for p in j) for j in alone) / 1e6:.1f} ms)")
        if late:
            lines.append(f"  second hart joins a job after: median {median(late) / 1e3:.1f} us, "
                         f"p90 {percentile(late, 90) / 1e3:.1f} us")
            lines.append(f"  harts finish a job apart by: median {median(apart) / 1e3:.1f} us, "
                         f"mean {sum(apart) / len(apart) / 1e3:.1f} us")
    return lines


def width_lines(tr):
    """Each row team's measuring windows (WIDTH events), one line each, then
    per width the number of windows and their median ps per multiply-add.
    A probe is a window whose verdict is won, adopted, lost or unjudged."""
    by_worker = {}
    for e in tr.events:
        if e.name == "WIDTH":
            by_worker.setdefault(e["worker"], []).append(e)
    lines = []
    for w, all_evs in sorted(by_worker.items()):
        t0 = all_evs[0].t
        survey = [e for e in all_evs if e["verdict"] == WIDTH_SURVEY]
        chosen = [e for e in all_evs if e["verdict"] == WIDTH_SURVEYED]
        evs = [e for e in all_evs if e["verdict"] not in (WIDTH_SURVEY, WIDTH_SURVEYED)]
        if survey:
            lines.append(f"worker {w}: survey, ps per step of the stand-in job at each width")
            for width in sorted({e["width"] for e in survey}):
                mine = [e["ps_per_mac"] for e in survey if e["width"] == width]
                lines.append(f"  width {width}: " + " ".join(str(v) for v in mine) + f" (median {median(mine):.0f})")
            for e in chosen:
                lines.append(f"  chose width {e['width']} after {(e.t - t0) / 1e6:.1f} ms")
        if not evs:
            continue
        t0 = evs[0].t
        lines.append(f"worker {w}: {len(evs)} measuring windows")
        lines.append("  t_ms width ps_per_mac reference_ps verdict")
        for e in evs:
            verdict = WIDTH_VERDICTS.get(e["verdict"], str(e["verdict"]))
            lines.append(f"  {(e.t - t0) / 1e6:.1f} {e['width']} {e['ps_per_mac']} {e['reference_ps']} {verdict}")
        for width in sorted({e["width"] for e in evs}):
            mine = [e for e in evs if e["width"] == width]
            probes = [e for e in mine if e["verdict"] != 1]
            lines.append(f"  width {width}: {len(mine)} windows ({len(probes)} probes), "
                         f"median {median([e['ps_per_mac'] for e in mine]):.0f} ps per multiply-add")
        counts = {}
        for e in evs:
            name = WIDTH_VERDICTS.get(e["verdict"], str(e["verdict"]))
            counts[name] = counts.get(name, 0) + 1
        lines.append("  verdicts: " + ", ".join(f"{k} {counts[k]}" for k in list(WIDTH_VERDICTS.values())[:5]
                                                if k in counts))
        lines.append(f"  settled at the end: {settled_width(evs)}")
    return lines


def settled_width(evs):
    """The settled width after the last window: the width of the last
    reference or adopted window, or of the survey's choice (a won, lost or
    unjudged probe ran at a neighbour and is followed by the settled width)."""
    for e in reversed(evs):
        if e["verdict"] in (1, 3, WIDTH_SURVEYED):
            return e["width"]
    return "unknown"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", help="console transcript or file holding aitrace's lines")
    p.add_argument("--json", help="write Chrome trace-event JSON here")
    p.add_argument("--png", help="write a PNG timeline here")
    p.add_argument("--title", help="title of the PNG")
    p.add_argument("--summary", action="store_true", help="print each request as the trace tells it")
    p.add_argument("--handoffs", action="store_true",
                   help="print where the row teams' time goes (needs the `parts` class)")
    p.add_argument("--widths", action="store_true",
                   help="print each row team's measuring windows and the width control's verdicts")
    a = p.parse_args(argv)
    try:
        with open(a.log, errors="replace") as f:
            text = f.read()
    except OSError as e:
        p.error(f"cannot read {a.log}: {e.strerror}")
    events = parse(text)
    if not events:
        print(f"trace.py: {a.log}: no trace events (lines 'ev SEQ T_NS HART NAME ...' from aitrace)",
              file=sys.stderr)
        return 1
    tr = Trace(events)
    if a.json:
        write_json(tr, a.json)
    if a.png:
        write_png(tr, a.png, a.title)
    if a.handoffs:
        lines = handoff_lines(tr)
        print("\n".join(lines) if lines else "no row-team parts in the trace (aitrace start parts)")
    if a.widths:
        lines = width_lines(tr)
        print("\n".join(lines) if lines else "no WIDTH events in the trace (a row team of 2 or more harts, "
              "class iterations)")
    if a.summary or not (a.json or a.png or a.handoffs or a.widths):
        print("\n".join(summary_lines(tr)))
    print(f"trace.py: {len(events)} events, {len(tr.requests)} requests, {len(tr.iterations)} iterations",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
