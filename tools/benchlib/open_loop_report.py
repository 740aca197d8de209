"""The open-loop sweep's report.md and its PNG figures (open_loop.py runs
the boots and computes the figures; this draws them). Every table and plot
says which clock it was measured with."""
import math

from . import queueing as Q
from .plots import Figures, pyplot

CLOCK = ("virtual time (exact mode, QEMU -icount with idle stretches warped to the next timer deadline, "
         "one hart): 1 instruction = 1 ns")
TICK_MS = 10


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.{digits}f}"


def batch_ci(p):
    """Batch means' interval (the data alone), for contrast; older summaries lack it."""
    if p.get("batch_ci95_low_ms") is None:
        return "-"
    return f"[{fmt(p['batch_ci95_low_ms'])}, {fmt(p['batch_ci95_high_ms'])}]"


def verdict_word(p):
    return {True: "agrees", False: "DIFFERS", None: "no theory"}[p["agrees"]]


def report(summary):
    pts, solo, sat = summary["points"], summary["solo"], summary["saturation"]
    cfg = summary["config"]
    L = ["# Open loop: waits against queueing theory", "",
         f"Command: `{summary['command']}`  ", f"Date: {summary['date']}; commit {summary['commit']}  ",
         f"Clock: {CLOCK}. Wall time of the sweep: "
         + ("not recorded" if summary.get("wall_s") is None else f"{summary['wall_s'] / 60:.1f} min")
         + " (real time, host-dependent).",
         "", f"Model {cfg['name']} ({cfg['bundle']}), prompt {cfg['prompt']} tokens, int8 activations, "
             f"one client with Poisson arrivals (aibench --rate, seeded), {cfg['warmup']:g}% of each point's "
             "requests discarded as warm-up. 95% confidence interval of a mean wait: where a formula applies, "
             "the spread of 20000 simulated runs of the ideal queue with the point's own length and warm-up "
             "(queueing.model_ci); elsewhere batch means (10 batches), shown for contrast as \"batch CI\".", ""]
    L += ["## Service times alone", "", "| boot | request | S mean ms | min ms | max ms | timer ticks |",
          "|---|---|---|---|---|---|"]
    for c, s in solo.items():
        for k in ("short", "long"):
            if k in s:
                x = s[k]
                L.append(f"| {c} | {x['predict']} tokens | {x['mean_s'] * 1e3:.2f} | {x['min_s'] * 1e3:.2f} | "
                         f"{x['max_s'] * 1e3:.2f} | {x['mean_s'] * 1e3 / TICK_MS:.1f} |")
    L.append("")
    head = ("| rho | requests | mean wait ms [95% CI] | batch CI | theory ms | replay ms | p95 wait ms | "
            "theory p95 ms | verdict |")
    if any(p["config"] == "max_batch=1" for p in pts):
        L += ["## One request at a time (ai.max_batch=1): M/D/1", "",
              "theory: M/D/1 mean wait rho S / (2 (1 - rho)) and its 95th percentile (Erlang's formula); "
              "M/M/1 (rho S / (1 - rho)) for contrast. replay: the same single server fed the measured "
              "arrival times with S fixed (the Lindley recursion): what this run's own arrivals predict.", "",
              head.replace("verdict |", "M/M/1 ms | verdict |"), "|---|---|---|---|---|---|---|---|---|---|"]
        for p in pts:
            if p["config"] == "max_batch=1":
                L.append(f"| {p['rho']:g} | {p['requests']} | {fmt(p['mean_wait_ms'])} [{fmt(p['ci95_low_ms'])}, "
                         f"{fmt(p['ci95_high_ms'])}] | {batch_ci(p)} | {fmt(p['theory_ms'])} | "
                         f"{fmt(p['replay_ms'])} | {fmt(p['p95_wait_ms'])} | {fmt(p['theory_p95_ms'])} | {fmt(p['mm1_ms'])} | "
                         f"{verdict_word(p)} |")
        L += ["", "![waits against rho](wait_vs_rho.png)", ""]
    if any(p["config"] == "mix" for p in pts):
        ms = solo.get("mix", {})
        L += ["## Two request sizes (ai.max_batch=1): M/G/1", "",
              f"{100 - cfg['long_share']}% of the requests generate {cfg['predict']} tokens, {cfg['long_share']}% "
              f"generate {cfg['long_predict']}: E[S] = {ms.get('mix_mean_s', 0) * 1e3:.1f} ms, "
              f"E[S^2] = {ms.get('mix_second_moment_s2', 0) * 1e6:.0f} ms^2. theory: M/G/1 "
              "lambda E[S^2] / (2 (1 - rho)); for contrast M/D/1 with the same mean.", "",
              "| rho | requests | mean wait ms [95% CI] | batch CI | M/G/1 ms | replay ms | p95 wait ms | "
              "M/D/1 same mean ms | verdict |", "|---|---|---|---|---|---|---|---|---|"]
        for p in pts:
            if p["config"] == "mix":
                L.append(f"| {p['rho']:g} | {p['requests']} | {fmt(p['mean_wait_ms'])} [{fmt(p['ci95_low_ms'])}, "
                         f"{fmt(p['ci95_high_ms'])}] | {batch_ci(p)} | {fmt(p['theory_ms'])} | {fmt(p['replay_ms'])} | "
                         f"{fmt(p['p95_wait_ms'])} | {fmt(p['mm1_ms'])} | {verdict_word(p)} |")
        L += ["", "![the mix against M/G/1](mix_vs_rho.png)", ""]
    L += ["## Throughput against offered load", "",
          "Offered load in units of one-at-a-time capacity 1/S (rho = lambda S).", "",
          "| config | rho | offered req/s | throughput req/s | done / submitted | mean wait ms | p95 wait ms | "
          "most in system |",
          "|---|---|---|---|---|---|---|---|"]
    for p in pts:
        if p["config"] != "mix":
            L.append(f"| {p['config']} | {p['rho']:g} | {p['offered_rps']:.3f} | {p['throughput_rps']:.3f} | "
                     f"{p['done']} / {p['submitted']} | {fmt(p['mean_wait_ms'])} | {fmt(p['p95_wait_ms'])} | "
                     f"{p['max_in_flight_hint']} |")
    L.append("")
    if "one_at_a_time_rps" in sat:
        L.append(f"Saturation of one request at a time: 1/S = {sat['one_at_a_time_rps']:.3f} req/s.")
    if "default_measured_rps" in sat:
        line = f"The default (batching) engine's highest measured throughput: {sat['default_measured_rps']:.3f} req/s"
        if "ratio" in sat:
            line += f", {sat['ratio']:.2f}x one at a time"
        L.append(line + ".")
    L += ["", "![throughput against offered load](throughput_vs_load.png)", "",
          "The verdict: a measured mean agrees when the theory lies inside its 95% confidence interval "
          "(where 95% of ideal runs of the same length fall around the theory), or within 15% of it, whichever "
          "is wider. Above rho = 1 the queue has no steady state "
          "(theory: infinite): the mean wait there grows with the length of the run. A request that finds "
          "its client holding all 32 request slots is refused (KAI_EDQUOT): done < submitted.", ""]
    return "\n".join(L)


def _measured_means(ax, points):
    """The measured mean waits against rho, with their 95% intervals."""
    ax.errorbar([p["rho"] for p in points], [p["mean_wait_ms"] for p in points],
                yerr=[[p["mean_wait_ms"] - p["ci95_low_ms"] for p in points],
                      [p["ci95_high_ms"] - p["mean_wait_ms"] for p in points]],
                fmt="ko", capsize=4, label="measured (95% CI)")


def open_loop_plots(out, summary):
    plt = pyplot()
    figures = Figures(out)
    pts, solo = summary["points"], summary["solo"]

    def curve(fn, top):
        xs = [i / 200 for i in range(1, int(min(top, 0.99) * 200) + 1)]
        return xs, [fn(x) for x in xs]

    one = [p for p in pts if p["config"] == "max_batch=1"]
    if one:
        S = solo["max_batch=1"]["short"]["mean_s"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        top = max(p["rho"] for p in one)
        stable = [p for p in one if p["theory_ms"] is not None and not math.isinf(p["theory_ms"])]
        ymax = max([p["ci95_high_ms"] for p in stable] + [p["theory_ms"] for p in stable] + [1]) * 1.6
        for ax, what in zip(axes, ("mean", "p95")):
            if what == "mean":
                xs, ys = curve(lambda r: 1e3 * Q.md1_mean_wait(r, S), top)
                ax.plot(xs, ys, "C0-", label="M/D/1")
                xs, ys = curve(lambda r: 1e3 * Q.mm1_mean_wait(r, S), top)
                ax.plot(xs, ys, "C1--", label="M/M/1 (contrast)")
                _measured_means(ax, one)
                ax.set_title("mean queue wait, ai.max_batch=1")
            else:
                xs, ys = curve(lambda r: 1e3 * Q.md1_wait_quantile(0.95, r, S), top)
                ax.plot(xs, ys, "C0-", label="M/D/1 p95")
                xs, ys = curve(lambda r: 1e3 * Q.mm1_wait_quantile(0.95, r, S), top)
                ax.plot(xs, ys, "C1--", label="M/M/1 p95 (contrast)")
                ax.plot([p["rho"] for p in one], [p["p95_wait_ms"] for p in one], "ks", label="measured p95")
                ax.set_title("95th percentile of the queue wait")
                ymax = max(ymax, max([p["p95_wait_ms"] for p in stable] + [0]) * 1.3)
            ax.axvline(1.0, color="grey", lw=0.8)
            ax.set_xlabel("offered load rho = lambda S")
            ax.set_ylabel("ms (virtual time)")
            ax.set_ylim(0, ymax)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper left")
        fig.suptitle(f"Open loop, one request at a time, S = {S * 1e3:.0f} ms ({CLOCK})", fontsize=9)
        figures.save(fig, "wait_vs_rho.png")
    mix = [p for p in pts if p["config"] == "mix"]
    if mix:
        m = solo["mix"]
        fig, ax = plt.subplots(figsize=(6, 4.2))
        top = max(p["rho"] for p in mix)
        xs, ys = curve(lambda r: 1e3 * Q.mg1_mean_wait(r / m["mix_mean_s"], m["mix_mean_s"],
                                                       m["mix_second_moment_s2"]), max(top, 0.9))
        ax.plot(xs, ys, "C2-", label="M/G/1 (Pollaczek-Khinchine)")
        xs, ys = curve(lambda r: 1e3 * Q.md1_mean_wait(r, m["mix_mean_s"]), max(top, 0.9))
        ax.plot(xs, ys, "C0:", label="M/D/1, same mean (contrast)")
        _measured_means(ax, mix)
        ax.set_xlabel("offered load rho = lambda E[S]")
        ax.set_ylabel("mean queue wait, ms (virtual time)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title("two request sizes, ai.max_batch=1", fontsize=9)
        figures.save(fig, "mix_vs_rho.png")
    thr = [p for p in pts if p["config"] != "mix"]
    if thr:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        top = max(p["offered_rps"] for p in thr) * 1.05
        ax.plot([0, top], [0, top], color="grey", lw=0.8, label="throughput = offered load")
        for c, style in (("max_batch=1", "C0o-"), ("default", "C3s-")):
            ps = sorted((p for p in thr if p["config"] == c), key=lambda p: p["offered_rps"])
            if ps:
                ax.plot([p["offered_rps"] for p in ps], [p["throughput_rps"] for p in ps], style,
                        label={"max_batch=1": "ai.max_batch=1", "default": "default engine (batching)"}[c])
        sat = summary["saturation"]
        if "one_at_a_time_rps" in sat:
            ax.axhline(sat["one_at_a_time_rps"], color="C0", ls=":", label="1/S: one at a time")
        if "default_measured_rps" in sat:
            ax.axhline(sat["default_measured_rps"], color="C3", ls=":", label="batching, measured saturation")
        ax.set_xlabel("offered load, requests/s (virtual time)")
        ax.set_ylabel("throughput, requests/s")
        ax.set_xlim(0, top)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title("throughput against offered load", fontsize=9)
        figures.save(fig, "throughput_vs_load.png")
    return figures.files
