"""tools/perf.py (`make perf`) reads what the guest and QEMU print correctly
and reports each case as median [min..max] with nanoseconds per counted
instruction, paired warm/cold ratios, QEMU's cross-page block count and the
host-noise flags, and next to each warm case the row team's harts in use
that `aistat` printed after that boot. Guest output here is written by hand
in the programs' formats (coldwarm --csv, aibench, ai --timing, calib,
aistat, QEMU's `info jit`)."""
import datetime
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import perf  # noqa: E402

COLDWARM_OUT = """coldwarm,1,cold,4000000,200000,2300000,170000,2000000
coldwarm,1,warm,3000000,0,2100000,180000,2000000
coldwarm,2,cold,4100000,210000,2400000,172000,2000000
coldwarm,2,warm,3100000,0,2000000,171000,2000000
coldwarm,3,cold,4200000,190000,2350000,171000,2000000
"""

INFO_JIT = """Translation buffer state:
gen code size       1579107/1073736704
TB count            3339
TB avg target size  14 max=240 bytes
cross page TB count 7 (1%)
direct jump count   1862 (55%) (2 jumps=1514 45%)
TB hash buckets     2727/8192 (33.29% head buckets used)
"""


def test_coldwarm_pairs_keep_only_complete_runs():
    runs = perf.coldwarm_runs(COLDWARM_OUT)
    assert len(runs) == 2   # run 3 has no warm half
    assert runs[0]["cold"]["tpot"] == 170000 and runs[0]["warm"]["ttft"] == 2100000
    assert runs[1]["warm"]["tpot"] == 171000
    assert runs[0]["cold"]["prefill"] == 2000000 and runs[0]["cold"]["ttft"] == 2300000


def test_batch_cost_and_one_request():
    text = ("aibench: model SMOL, 8 clients x 1 requests, prompt 4, predict 16, int8 activations\n"
            "requests: 8 done, 0 failed or cancelled, 0 never reported, 0 clients died; wall 12.800 s\n")
    assert perf.batch_cost_us(text) == 12.8e6 / (8 * 16)
    assert perf.batch_cost_us(text.replace("8 done", "7 done")) is None   # not a full batch
    one = perf.one_request("26746 155\ntiming model=SMOL path=warm prompt=5 gen=16 queue_us=290 "
                           "ttft_us=2754365 prefill_us=2700000 tpot_us=456246 total_us=9600000 "
                           "iterations=16 mean_batch=1.00 finish=length\n")
    assert one == {"ttft": 2754365, "tpot": 456246}
    assert perf.one_request("ai: model: no such model\n") is None


def test_report_has_medians_ratios_ns_per_instruction_jit_and_noise_flags():
    pairs = perf.coldwarm_runs(COLDWARM_OUT)
    real = {"cold tpot": [170000, 172000, 250000], "warm tpot": [180000, 171000, 175000],
            "cold ttft": [2_300_000, 2_400_000], "cold prefill": [1_000_000, 1_010_000],
            "pairs": pairs, "smp2 harts1 tpot": [400000, 410000], "smp2 harts2 tpot": [220000, 230000],
            "batch8 max_batch1": [180000, 190000, 200000], "smp2 harts2 batch8": [60000, 62000, 70000],
            "harts pairs": [({"ttft": 0, "tpot": 400000}, {"ttft": 0, "tpot": 220000}),
                            ({"ttft": 0, "tpot": 410000}, {"ttft": 0, "tpot": 230000})],
            "smp2 alone batch8": [200000, 190000, 180000], "smp4 harts3 first tpot": [130000],
            # -smp 2 and -smp 4 in alternating boots: each round's medians,
            # and calib before the first boot and after the second (round 2:
            # the host slowed by 54%)
            "smp rounds": [(80000, 84000), (90000, 88000), (78000, 80000)],
            "smp rounds calib": [(13000, 13100), (13000, 20000), (13000, 13000)],
            "smp4 harts3 boots tpot": [84000, 83000, 85000],
            # calib around each pair: the second harts pair ran while the host slowed by 30%
            "harts pairs calib": [(13000, 13100), (13100, 17030)],
            "batch pairs smp2 calib": [(13000, 13000), (13000, 13000), (None, 13000)],
            "batch pairs smp2": [(200000, 60000), (190000, 62000), (180000, 70000)],
            "row team": {"smp2 harts2 tpot": "harts=2 harts_in_use=1",
                         "smp2 harts2 batch8": "harts=2 harts_in_use=1"}}
    exact = {"cold tpot": 433_000_000, "warm tpot": 435_000_000, "one tpot": 440_000_000,
             "cold ttft": 1_100_000_000, "cold prefill": 1_000_000_000,
             "perfbench": {"decode@1": (134_790_912, 432_398_700)}}
    jit = {"tbs": (3339,), "cross_page": (7, 1), "direct": (1862, 55)}
    boots = [("-smp 1", 100000, 101000), ("-smp 2 ai.harts=1", 100000, 130000),
             ("-smp 4 ai.harts=3", 100000, 150000, 101000)]
    when = datetime.datetime(2026, 12, 3, 14, 0, tzinfo=datetime.timezone.utc)
    text = perf.report(exact, real, boots, jit, 3, when, "load 0.10", "load 0.20")
    assert "make perf, 2026-12-03 14:00 UTC" in text and "load 0.10" in text
    # cold TPOT: median 172 ms of [170..250]; 172000 us / 433e6 instructions = 0.397 ns
    assert "| cold TPOT (llmrun) | 1 | 1 | 172.0 [170.0..250.0] | 433.0 M | 0.397 |" in text
    assert "| one request TPOT | 2 | 2 | 225.0 [220.0..230.0] | 440.0 M | 0.511 | harts=2 harts_in_use=1 |" in text
    # no aistat for this case's boot (here: none given): a dash, not a guess
    assert "| one request TPOT | 2 | 1 | 405.0 [400.0..410.0] | 440.0 M | 0.920 | - |" in text
    assert text.count("harts_in_use=1") == 2
    # paired ratios: 180/170 and 171/172
    assert "warm/cold TPOT (paired runs, -smp 1) = 1.027 [0.994..1.059]" in text
    # harts pairs: 220/400 = 0.550 and 230/410 = 0.561, median of two = their mean
    assert "one request TPOT, 2 harts / 1 hart at -smp 2 (paired runs, aictl harts) = 0.555 [0.550..0.561]" in text
    # 8 clients paired at -smp 2: 200/60 = 3.333, 190/62 = 3.065, 180/70 = 2.571
    assert ("8 clients, tokens/s batched on 2 harts / one at a time on 1 hart at -smp 2 (paired runs, aictl) = "
            "3.065 [2.571..3.333]x") in text
    assert "| warm per token, 8 clients, ai.max_batch=1 | 2 | 1 | 190.0 [180.0..200.0] | - | - |" in text
    # ... and over the pairs on a steady host: the first harts pair alone
    # (13100 / 13000: 0.8% apart; 17030 / 13100: 30%); a pair without a
    # reading before it is not counted as steady
    assert ("(paired runs, aictl harts) = 0.555 [0.550..0.561]; steady host, 1 of 2 pairs: 0.550 [0.550..0.550]"
            in text)
    assert "= 3.065 [2.571..3.333]x; steady host, 2 of 3 pairs: 3.199 [3.065..3.333]x" in text
    # the first request after a boot has a row of its own (440e6 instructions: 0.295 ns each)
    assert "| first request after boot, TPOT (not in the medians) | 4 | 3 | 130.0 [130.0..130.0] | 440.0 M | 0.295 |" in text
    # -smp 4 / -smp 2 per round: 84/80 = 1.050, 88/90 = 0.978, 80/78 =
    # 1.026; over the steady rounds 1 and 3: (1.050 + 1.026) / 2 = 1.038
    assert ("one request TPOT, -smp 4 (3 harts) / -smp 2 (2 harts) (alternating boots, medians of 3 requests "
            "each) = 1.026 [0.978..1.050]; steady host, 2 of 3 pairs: 1.038 [1.026..1.050]") in text
    assert "| one request TPOT (alternating boots) | 4 | 3 | 84.0 [83.0..85.0] | 440.0 M | 0.191 |" in text
    # no smp1 batch pairs given: no such line
    assert "at -smp 1 (paired runs" not in text
    # 8 clients: 190 ms per token one at a time, 62 ms batched on two harts
    assert "8 clients, tokens/s at -smp 2 ai.harts=2 (batching) / at -smp 1 ai.max_batch=1 = 3.06x" in text
    assert "| warm per token, 8 clients, ai.max_batch=1 | 1 | 1 | 190.0 [180.0..200.0] | - | - |" in text
    assert "3339 translation blocks, 7 cross a page (1%), direct jumps 1862 (55%)" in text
    assert "calib -smp 1: 100000 -> 101000 us\n" in text
    assert "NOISY HOST: calibration moved 30%" in text
    # A slow stretch in the middle of a boot: first and last readings agree,
    # the one between is 50% slower. (Readings 100000, 101000, 100000,
    # 130000, 100000, 150000, 101000: median 101000; 150000 is 49% slower.)
    assert ("calib -smp 4 ai.harts=3: 100000 -> 101000 us (all 3 readings 100000..150000 us)  NOISY HOST: "
            "calibration moved 50% during the point; host 49% slower than the study's median calibration") in text
    assert "instr/MAC (exact, perfbench): decode@1=3.21" in text
    # ns per instruction of the one-hart cases: cold TTFT 2350000 us / 1.1e9
    # = 2.136 (it waits for the disk), cold prefill 1.005, one request at
    # -smp 2 with one hart 0.920, warm TPOT 175000 / 435e6 = 0.402, cold
    # TPOT 0.397: median 0.920, furthest off cold TTFT, 2.136 / 0.920 - 1 =
    # +132%; without it the median is (0.402 + 0.920) / 2 = 0.661 and cold
    # prefill is furthest off, 1.005 / 0.661 - 1 = +52% (cold TPOT: -40%).
    assert "ns per instruction, one-hart cases: median 0.920, furthest off +132% (cold launch TTFT (llmrun), -smp 1)" in text
    assert ("ns per instruction, one-hart cases without disk waits (all but cold TTFT): "
            "median 0.661, furthest off +52% (cold prefill (llmrun's ttft_us: no fork, exec, loading), -smp 1)") in text
    # The same from each case's fastest run: cold prefill 1000000 us / 1e9 =
    # 1.000, cold TPOT 170000 / 433e6 = 0.393, warm TPOT 171000 / 435e6 =
    # 0.393, one request at -smp 2 400000 / 440e6 = 0.909: median (0.393 +
    # 0.909) / 2 = 0.651, cold prefill furthest off, 1.000 / 0.651 - 1 = +54%.
    assert ("ns per instruction, one-hart cases without disk waits, each case's fastest run: "
            "median 0.651, furthest off +54% (cold prefill (llmrun's ttft_us: no fork, exec, loading), -smp 1)") in text
    assert "| cold prefill (llmrun's ttft_us: no fork, exec, loading) | 1 | 1 | 1005.0 [1000.0..1010.0] | 1000.0 M | 1.005 |" in text


def test_info_jit_parsing():
    got = {k: tuple(int(g) for g in rx.search(INFO_JIT).groups()) for k, rx in perf.JIT.items()}
    assert got == {"tbs": (3339,), "cross_page": (7, 1), "direct": (1862, 55)}


AISTAT_OUT = """models: 1
  SMOL     llama    ready   dim=576 layers=30 vocab=49152 seq=256 params=134515008 bytes=134876160 load_ms=900
queue: capacity=64 workers=1 queued=0 running=0
scheduling: policy=fcfs aging_ms=0 max_per_process=0 preempt_gap=0
requests: submitted=5 completed=5 failed=0 cancelled=0 rejected=0 in_flight=0
engine: max_batch=8 budget=32 harts=3 harts_in_use=2 iterations=90 mean_batch=1.00 tokens_per_iteration=1.04
kv: block=16 blocks_total=512 used=0 cached=3 prefix_cache=on prefix_hits=4 prefix_tokens=64 preemptions=0
"""


def test_row_team_from_aistat():
    assert perf.row_team_of(AISTAT_OUT) == "harts=3 harts_in_use=2"
    assert perf.row_team_of("aistat: no such device\n") is None


def test_a_pair_on_a_host_slow_throughout_is_not_steady():
    # Readings agree (12000 -> 12100) and the run's fastest is 11800: steady.
    assert perf.steady_pair((12000, 12100), full_speed_us=11800)
    # They agree (17000 -> 17500) but lie 48% above the run's fastest: a host
    # short of part of a core, not steady (without the run's fastest: steady).
    assert not perf.steady_pair((17000, 17500), full_speed_us=11800)
    assert perf.steady_pair((17000, 17500))
    # 13570 is exactly 15% above 11800: still steady; 13571 is not.
    assert perf.steady_pair((13570, 13570), full_speed_us=11800)
    assert not perf.steady_pair((13571, 13571), full_speed_us=11800)
    # Ratios 3.0 and 1.8; only the first pair ran at full speed.
    text = perf.ratio_line("8 clients", [300, 180], [100, 100], [(12000, 12000), (17000, 17200)], unit="x",
                           full_speed_us=11800)
    assert text == "8 clients = 2.400 [1.800..3.000]x; steady host, 1 of 2 pairs: 3.000 [3.000..3.000]x"
