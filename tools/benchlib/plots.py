"""The PNG figures of the benchmark report. Every title says which clock
the figure was measured with (real time, or virtual time in exact mode)."""
import os

from . import work

REAL = "real time"
EXACT = "virtual time: 1 instruction = 1 ns"


def pyplot():
    """matplotlib's pyplot, drawing into files (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_png(fig, path, dpi=90):
    """Lays out fig, writes it to path and frees it."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)


class Figures:
    """The PNGs a study draws into its directory out: save(fig, name) each
    one; files lists their names in order (for summary.json and the report)."""

    def __init__(self, out):
        self.out, self.files = out, []

    def save(self, fig, name):
        save_png(fig, os.path.join(self.out, name))
        self.files.append(name)


def _errorbar(ax, xs, summaries, scale, **kw):
    """Median with min-max error bars; returns the line."""
    med = [s["median"] / scale for s in summaries]
    lo = [(s["median"] - s["min"]) / scale for s in summaries]
    hi = [(s["max"] - s["median"]) / scale for s in summaries]
    return ax.errorbar(xs, med, yerr=[lo, hi], capsize=4, **kw)


def _clients_axis(ax, clients):
    from matplotlib.ticker import ScalarFormatter
    ax.set_xlabel("concurrent clients")
    ax.set_xscale("log", base=2)
    ax.set_xticks(clients)
    ax.get_xaxis().set_major_formatter(ScalarFormatter())
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)


def make_plots(out, summary, qwaits, samples):
    plt = pyplot()
    figures = Figures(out)
    save = figures.save

    sweep = {int(w): pts for w, pts in summary["sweep"].items()}
    clients = sorted({p["clients"] for pts in sweep.values() for p in pts})
    k = summary["config"]["repeat"]
    clock = summary["time_modes"]["sweep"]
    if sweep:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, key, title in ((axes[0], "e2e_p50_us", "End-to-end latency, p50"),
                               (axes[1], "ttft_p50_us", "Time to first token, p50")):
            for w, points in sorted(sweep.items()):
                cs = [p["clients"] for p in points]
                _errorbar(ax, cs, [p["spread"][key] for p in points], 1e3, fmt="o-", label=f"{w} worker(s)")
                flagged = [(p["clients"], r["metrics"][key] / 1e3) for p in points for r in p["runs"] if r["flags"]]
                if flagged:
                    ax.plot(*zip(*flagged), "x", color="tab:red", markersize=8)
            ax.plot([], [], "x", color="tab:red", label="a flagged run (host noise)")
            ax.set_ylabel("ms")
            ax.set_title(f"{title} ({clock})", fontsize=10)
            _clients_axis(ax, clients)
            ax.legend(fontsize=8)
        fig.suptitle(f"median of {k} boots; bars: min-max", fontsize=9)
        save(fig, "latency_vs_clients.png")

        # Requests/s and tokens/s in two panels (one axis each, so every line
        # in a legend is drawn; they differ by the tokens per request).
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, key, label in ((axes[0], "throughput_rps", "requests/s"), (axes[1], "tokens_per_s",
                                                                            "generated tokens/s")):
            for w, points in sorted(sweep.items()):
                _errorbar(ax, [p["clients"] for p in points], [p["spread"][key] for p in points], 1,
                          fmt="o-", label=f"{w} worker(s)")
            ax.set_ylabel(label)
            ax.set_title(f"Throughput: {label} ({clock})", fontsize=10)
            _clients_axis(ax, clients)
            ax.legend(fontsize=8)
        fig.suptitle(f"median of {k} boots; bars: min-max", fontsize=9)
        save(fig, "throughput_vs_clients.png")

    if qwaits:
        fig, ax = plt.subplots(figsize=(6, 4))
        all_clients = sorted({c for (_, c) in qwaits})
        all_workers = sorted({w for (w, _) in qwaits})
        for (w, c), vals in sorted(qwaits.items()):
            if not vals:
                continue
            v = sorted(x / 1e3 for x in vals)
            ax.step([0] + v, [0] + [(i + 1) / len(v) for i in range(len(v))], where="post",
                    label=f"{w} worker(s), {c} clients", color=f"C{all_clients.index(c)}",
                    linestyle=["-", "--", ":", "-."][all_workers.index(w) % 4])
        ax.set_xlabel("queue wait (ms)")
        ax.set_ylabel("fraction of requests")
        ax.set_title(f"Queue-wait CDF, all {k} boots pooled ({clock})", fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        save(fig, "queue_wait_cdf.png")

    biggest = max((c for (_, c), pts in samples.items() if pts), default=None)
    if biggest is not None:
        ws = sorted(w for (w, c), pts in samples.items() if c == biggest and pts)
        fig, axes = plt.subplots(1, len(ws), figsize=(5 * len(ws), 3.6), sharey=True, squeeze=False)
        for ax, w in zip(axes[0], ws):
            pts = samples[(w, biggest)]
            t = [(x - pts[0][0]) / 1e9 for x, _, _ in pts]
            run = [r for _, _, r in pts]
            tot = [q + r for _, q, r in pts]
            ax.fill_between(t, 0, run, step="post", color="tab:green", alpha=0.6, label="running")
            ax.fill_between(t, run, tot, step="post", color="tab:orange", alpha=0.6, label="queued")
            ax.set_title(f"{w} worker(s), {biggest} clients", fontsize=10)
            ax.set_xlabel("time since the run started (s)")
            ax.yaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("requests in the service")
        axes[0][0].legend(loc="upper right", fontsize=8)
        fig.suptitle(f"Requests in the service over time, first boot (sampled every 10 ms; {clock})", fontsize=10)
        save(fig, "in_system.png")

    disks = summary["cold_warm"].get("disks", {})
    if disks:
        fig, ax = plt.subplots(figsize=(1.6 * len(disks) + 3, 4))
        names = list(disks)
        for i, d in enumerate(names):
            m = disks[d]["medians"]
            if not m.get("cold"):
                continue
            load = m["cold"]["load_us"]["median"] / 1e3
            ttft = m["cold"]["launch_ttft_us"]["median"] / 1e3
            pre = m["cold"]["prefill_us"]["median"] / 1e3
            other = max(0.0, ttft - pre - load)
            x = i - 0.2
            ax.bar(x, load, 0.38, color="tab:red", alpha=0.35, hatch="//", label="cold: reading the model" if i == 0 else None)
            ax.bar(x, other, 0.38, bottom=load, color="tab:red", alpha=0.6, label="cold: fork, exec (reads llmrun), checks, setup" if i == 0 else None)
            ax.bar(x, pre, 0.38, bottom=load + other, color="tab:red", label="cold: prefill" if i == 0 else None)
            ax.text(x, ttft, f"{ttft:.0f}", ha="center", va="bottom", fontsize=8)
            wt = m["warm"]["launch_ttft_us"]["median"] / 1e3
            ax.bar(i + 0.2, wt, 0.38, color="tab:blue", label="warm (kernel service)" if i == 0 else None)
            ax.text(i + 0.2, wt, f"{wt:.0f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
        ax.set_xlabel("disk model (DISK=)")
        ax.set_ylabel("TTFT, median (ms)")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.15)
        ax.set_title(f"Cold vs warm TTFT per disk model\n({EXACT}; disk waits in real time)", fontsize=10)
        ax.legend(fontsize=7)
        save(fig, "cold_vs_warm.png")

    rows = summary.get("work", {}).get("phases")
    if rows:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        xs = [10 ** (i / 20) for i in range(-40, 81)]
        for i, m in enumerate(work.MACHINES):
            ax.plot(xs, [min(m["peak_macs"], x * m["bandwidth_Bps"]) for x in xs], color=f"C{i}", label=m["name"])
        for j, r in enumerate(rows):
            ax.axvline(r["intensity"], color="gray", linestyle=[":", "--", "-.", "-"][j % 4], linewidth=1)
            ax.text(r["intensity"] * 1.08, 1.3e9 * 4 ** j, r.get("short", r["phase"]), fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (multiply-adds per byte moved)")
        ax.set_ylabel("attainable int8 multiply-adds/s")
        ax.set_title(f"Roofline: {summary['config']['name']}'s phases on example machines", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3, which="both")
        save(fig, "roofline.png")
    return figures.files
