"""report.md: every table says which clock it was measured with."""
import os

import disk_models

from . import work
from .plots import EXACT, REAL

LITTLE_TOLERANCE_PCT = 10.0


def ms(us):
    if us is None:
        return "-"
    return f"{us / 1e3:.0f}" if us >= 10000 else f"{us / 1e3:.1f}"


def spread_ms(s):
    """median [min-max] in ms."""
    if not s or s["median"] is None:
        return "-"
    if s["n"] == 1:
        return ms(s["median"])
    return f"{ms(s['median'])} [{ms(s['min'])}-{ms(s['max'])}]"


def spread_num(s, fmt="{:.3f}"):
    if not s or s["median"] is None:
        return "-"
    if s["n"] == 1:
        return fmt.format(s["median"])
    return f"{fmt.format(s['median'])} [{fmt.format(s['min'])}-{fmt.format(s['max'])}]"


def ratio_text(r):
    return "-" if r is None else (f"{r:.2f}x" if r < 100 else f">{100 if r < 1000 else 1000}x")


def _eng(x):
    for unit, f in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= f:
            return f"{x / f:.1f} {unit}"
    return f"{x:.0f}"


def _seconds(t):
    if t >= 1e-3:
        return f"{t * 1e3:.1f} ms"
    return f"{t * 1e6:.1f} us" if t >= 1e-6 else f"{t * 1e9:.0f} ns"


def cold_warm_section(summary):
    cw = summary["cold_warm"]
    a = summary["config"]
    if not cw.get("disks"):
        return []
    lines = ["## Cold versus warm start, per disk model", "",
             f"**{EXACT}** (exact mode: `--deterministic`, one hart), except that waiting for the disk "
             "passes in real time (QEMU's `sleep=on`), so *loading* is what the throttled device costs. "
             f"{cw['runs_each']} runs of each path per disk model, alternating, in one boot per model; "
             "median [min-max] in ms. Cold: fork + exec of `llmrun`, which reads the whole bundle; warm: "
             "the kernel service, whose copy of the model was loaded at boot (through the same disk).", "",
             "| disk | cold launch TTFT | of which reading the model | warm launch TTFT | cold / warm "
             "| larger than the spread? | cold end-to-end | warm end-to-end | kernel's load at boot "
             "| tokens identical |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for d, r in cw["disks"].items():
        m = r["medians"]
        if not m.get("cold"):
            continue
        c = r["comparison"]
        lines.append(f"| `{d}` | {spread_ms(m['cold']['launch_ttft_us'])} | {spread_ms(m['cold']['load_us'])} | "
                     f"{spread_ms(m['warm']['launch_ttft_us'])} | {ratio_text(c['ratio'])} | {c['verdict']} | "
                     f"{spread_ms(m['cold']['e2e_us'])} | {spread_ms(m['warm']['e2e_us'])} | "
                     f"{r.get('boot_load_ms', '-')} ms | {'yes' if r['tokens_identical'] else '**NO**'} |")
    lines += ["", f"Prompt {a['prompt']} tokens, {a['predict']} generated. In exact mode the compute is the "
              "same in every run (the spread of launch TTFT is the disk's; docs/timing.md defines each figure); cold TPOT equals warm TPOT because both "
              "run the same `lib/` code. The disk models:", "", disk_models.markdown_table(), ""]
    return lines


def work_section(summary):
    wk = summary.get("work")
    if not wk or not wk.get("phases"):
        return []
    lines = ["## Counted work: arithmetic intensity and a roofline projection", "",
             f"Work of one request of the cold/warm study ({wk['source']}: "
             + ("counted by the runtime, from `llmrun --timing`" if wk["source"] == "counted" else
                "computed from the model's configuration by tools/benchlib/work.py; `llmrun --timing` "
                "did not report counts")
             + "). Intensity is multiply-adds per byte moved (weights + KV cache). The *batched* rows are "
               "what-ifs: the same prompt as one matrix-matrix product, each weight read once.", "",
             "| phase | multiply-adds | weight bytes | KV read + write | MAC/byte |", "|---|---|---|---|---|"]
    for r in wk["phases"]:
        lines.append(f"| {r['phase']} | {_eng(r['macs'])} | {_eng(r['weight_bytes'])}B | "
                     f"{_eng(r['kv_read'] + r['kv_write'])}B | {r['intensity']:.2f} |")
    if wk.get("check"):
        lines += ["", wk["check"]]
    lines += ["", "Projected on example machines (roofline: time = max(MACs / peak, bytes / bandwidth); "
              "**bold** = compute-bound, else memory-bound):", "",
              "| phase | " + " | ".join(m["name"] for m in work.MACHINES) + " |",
              "|---|" + "---|" * len(work.MACHINES)]
    for r in wk["phases"]:
        cells = []
        for m in work.MACHINES:
            p = work.roofline(r, m)
            t = _seconds(p["seconds"])
            cells.append(f"**{t}**" if p["bound"] == "compute" else t)
        lines.append(f"| {r['phase']} | " + " | ".join(cells) + " |")
    lines += ["", work.machines_markdown(), "",
              "Decode moves every weight for one token's worth of arithmetic (about 1 MAC per byte), far "
              "below every machine's ridge point: memory-bound everywhere, and a faster memory is the only "
              "cure. kai's prefill, one token at a time, is no better; a batched prefill of a long prompt "
              "does hundreds of MACs per weight byte and becomes compute-bound on the CPUs.", ""]
    return lines


def sweep_section(summary):
    a = summary["config"]
    lines = ["## Clients sweep", "",
             f"**{summary['time_modes']['sweep']}**, QEMU `-smp {a['smp']}`, disk `{a['sweep_disk']}`. Closed loop: each client sends "
             f"{a['requests']} requests one after another. Each point ran in {a['repeat']} separate boots "
             f"(boot order and client order inside a boot randomised, seed {a['seed']}); each cell is the "
             "median over the boots of that boot's figure, [min-max] over the boots. Latencies in ms "
             "(per-boot p50); *service*: mean time a worker spent on a request; *calib*: the host-noise "
             "check (us of the fixed `calib` loop just before -> just after the point, median over boots); "
             "*flags*: boots whose calibration moved (see below).", "",
             "| workers | clients | req/s | tok/s | end-to-end p50 | queue wait p50 | TTFT p50 | TPOT p50 "
             "| service | calib before -> after | flagged boots |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for w, points in sorted(summary["sweep"].items(), key=lambda kv: int(kv[0])):
        for p in points:
            s = p["spread"]
            nflag = sum(1 for r in p["runs"] if r["flags"])
            lines.append(
                f"| {w} | {p['clients']} | {spread_num(s['throughput_rps'])} | {spread_num(s['tokens_per_s'], '{:.2f}')} | "
                f"{spread_ms(s['e2e_p50_us'])} | {spread_ms(s['queue_p50_us'])} | {spread_ms(s['ttft_p50_us'])} | "
                f"{spread_ms(s['tpot_p50_us'])} | {spread_ms(s['service_mean_us'])} | "
                f"{spread_num(s['calib_before_us'], '{:.0f}')} -> {spread_num(s['calib_after_us'], '{:.0f}')} | "
                f"{nflag}/{len(p['runs'])} |")
    return lines + [""]


def comparisons_section(summary):
    comps = summary.get("comparisons", [])
    if not comps:
        return []
    lines = ["## Comparisons: is the difference larger than the spread?", "",
             "For each pair, the medians, their ratio, and whether the min-max ranges over the repeats are "
             "apart (every repeat of one beat every repeat of the other). \"No\" means: with this many "
             "repeats on this host, the difference cannot be told from noise.", "",
             "| comparison | clock | figure | A | B | B / A | larger than the spread? |",
             "|---|---|---|---|---|---|---|"]
    for c in comps:
        fmt = spread_ms if c["unit"] == "us" else spread_num
        lines.append(f"| {c['what']} | {c['clock']} | {c['figure']} | {fmt(c['a'])} | {fmt(c['b'])} | "
                     f"{ratio_text(c['ratio'])} | {c['verdict']} |")
    return lines + [""]


def noise_section(summary):
    cal = summary.get("calibration")
    if not cal or cal.get("reference_us") is None:
        return []
    flagged = [(w, p["clients"], r) for w, pts in summary["sweep"].items() for p in pts for r in p["runs"]
               if r["flags"]]
    lines = ["## Host noise", "",
             f"`calib` ({cal['iterations']} iterations of a fixed integer loop) ran before and after every "
             f"point, in the same boot. Study median {cal['reference_us']:.0f} us, range {cal['min_us']}-"
             f"{cal['max_us']} us over {cal['count']} runs. A boot of a point is flagged when its calibration "
             f"moved by more than {cal['threshold_pct']:.0f}% during the point, or was more than "
             f"{cal['threshold_pct']:.0f}% slower than the study's median. "
             f"{len(flagged)} flagged (of {sum(len(p['runs']) for pts in summary['sweep'].values() for p in pts)}).",
             ""]
    for w, c, r in flagged:
        lines.append(f"- {w} worker(s), {c} clients, boot {r['boot'] + 1} of the study: {'; '.join(r['flags'])}")
    return lines + ([""] if flagged else [])


def write_report(out, summary, plots):
    a = summary["config"]
    env = summary["environment"]
    lines = ["# kai benchmark report", "",
             f"Command: `{summary['command']}`" + (" (run by `make bench`)" if summary.get("via_make") else ""),
             "",
             f"Model `{a['name']}` from `{a['bundle']}`; `-m {a['memory']}`; prompt {a['prompt']} tokens, "
             f"{a['predict']} generated per request; {'float' if a['float'] else 'int8'} activations; "
             f"AI service batching: {'kernel default' if not a.get('max_batch') else 'ai.max_batch=%d' % a['max_batch']}. "
             f"Commit `{env['commit']}`, {env['date']}, host: {env['host_cpus']} CPUs, load average "
             f"{env['loadavg_start']} at the start and {env.get('loadavg_end', '-')} at the end; the whole "
             f"study took {summary['wall_s'] / 60:.1f} min.", "",
             (f"Two clocks: the cold/warm study runs in exact mode (**{EXACT}**, one hart): compute costs "
              f"are the same in every boot. The clients sweep needs several harts, so it runs in **{REAL}**, "
              "repeated over boots, with a host-noise check." if summary["time_modes"]["sweep"] == REAL else
              f"The whole study ran in exact mode (`--deterministic`: **{EXACT}**, one hart), so the sweep's "
              "workers share one hart."), ""]
    lines += cold_warm_section(summary)
    lines += work_section(summary)
    lines += sweep_section(summary)
    lines += comparisons_section(summary)
    lines += noise_section(summary)
    ll = summary["littles_law"]
    lines += [f"**Little's law** (L = λW, {summary['time_modes']['sweep']}), checked in every boot of every point: worst disagreement "
              f"{ll['worst_pct']:.1f}% — {'within' if ll['ok'] else 'NOT within'} {LITTLE_TOLERANCE_PCT:.0f}%. "
              "L is the kernel's load meter (hart 0's timer samples the number of requests in the service every "
              "tick); λ and W come from the per-request timestamps."
              + (" A sampler *process* reading `ai_info` every 10 ms found L {:+.1f}% to {:+.1f}% off λW: it gets a "
                 "hart only when the scheduler gives it one, and the requests use the same harts (docs/experiments.md)."
                 .format(*ll["sampler_off_pct"]) if ll.get("sampler_off_pct") else ""), ""]
    if summary["problems"]:
        lines += ["## Problems", ""] + [f"- {p}" for p in summary["problems"]] + [""]
    lines += ["## Files", "",
              "`requests.csv` (one row per request and boot: kernel timestamps in ns, derived latencies in us), "
              "`samples.csv`, `coldwarm.csv` (per disk model), `calibration.csv`, `summary.json`, "
              "`console-*.log` (what the guest printed, one per boot).", ""]
    for p in plots:
        lines += [f"![{p}]({p})", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))
