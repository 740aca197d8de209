"""Pieces of tools/bench.py, one concern per module:

study     the boots: cold vs warm per disk model (exact mode), the sweep (real time)
parse     reading what the guest printed (aibench, coldwarm, calib)
latency   what TTFT, TPOT, queue wait ... are (the only place the formulas live)
spread    repeated measurements: median, min-max, bootstrap interval, comparisons
noise     the host-noise check (calib before and after a sweep point)
work      counted work: multiply-adds and bytes, arithmetic intensity, roofline
analysis  from raw runs to the summary: spreads, flags, comparisons, Little's law
plots     the PNG figures
report    report.md
"""
