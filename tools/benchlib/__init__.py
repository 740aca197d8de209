"""The measurement library every driver in tools/ uses (bench.py, its
--open-loop sweep, engine_study.py, perf.py, ab_kernels.py, chat_turns.py,
trace.py), one concern per module, each written once:

parse     reading what the guest printed (aibench, coldwarm, calib, ai --timing, chat --timing, aistat)
latency   what TTFT, TPOT, queue wait ... are, percentile and median (the only place the formulas live)
spread    repeated measurements: median, min-max, bootstrap interval, comparisons
noise     the host-noise check (calib before and after a sweep point)
work      counted work: multiply-adds and bytes, arithmetic intensity, roofline
queueing  queueing theory: M/D/1, M/M/1, M/G/1, confidence intervals of a mean wait
options   command-line pieces: lists of numbers, a bundle's name under /AI
output    what a study records: its environment (commit, host, QEMU) and CSV files
plots     the PNG figures (and the matplotlib set-up every figure shares)
boots     booting kai for a study (image, commands, progress); bench.py's boots: cold vs warm
          per disk model (exact mode), the sweep (real time)
analysis  bench.py from raw runs to the summary: spreads, flags, comparisons, Little's law
report    bench.py's report.md
open_loop, open_loop_report
          bench.py --open-loop: the boots and analysis, and its report and figures
"""
