"""tools/instr_mix.py sorts the instructions that exact-mode timer samples
landed on into kinds and charges each kind opcost's time: the mnemonics, the
samples, the costs and the expected shares and prediction below are written by
hand."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "instr_mix.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import instr_mix  # noqa: E402


@pytest.mark.parametrize("mnemonic, kind", [
    ("add", "integer"), ("c.addi", "integer"), ("frflags", "integer"), ("fence", "integer"), ("sll", "integer"),
    ("bne", "branch"), ("bgeu", "branch"), ("c.beqz", "branch"), ("jal", "branch"), ("j", "branch"),
    ("c.j", "branch"), ("jalr", "branch"), ("ret", "branch"),
    ("mul", "multiply"), ("mulhu", "multiply"), ("c.mul", "multiply"), ("divuw", "multiply"), ("remw", "multiply"),
    ("ld", "memory"), ("c.lwsp", "memory"), ("lbu", "memory"), ("sd", "memory"), ("c.sdsp", "memory"),
    ("flw", "memory"), ("c.fld", "memory"), ("fsd", "memory"),
    ("fmv.w.x", "float move"), ("fsgnjx.s", "float move"), ("fneg.s", "float move"), ("fabs.d", "float move"),
    ("fadd.s", "float32"), ("fmul.s", "float32"), ("fsqrt.s", "float32"), ("fmax.s", "float32"),
    ("fmadd.s", "float32 fused"), ("fnmsub.s", "float32 fused"),
    ("fadd.d", "float64"), ("fdiv.d", "float64"), ("fmadd.d", "float64"),
    ("flt.s", "float compare"), ("feq.d", "float compare"), ("fclass.s", "float compare"),
    ("fcvt.d.s", "convert exact"), ("fcvt.s.w", "convert exact"), ("fcvt.s.l", "convert exact"),
    ("fcvt.d.lu", "convert exact"),
    ("fcvt.s.d", "convert rounding"), ("fcvt.w.s", "convert rounding"), ("fcvt.l.d", "convert rounding"),
])
def test_each_instruction_falls_in_its_kind(mnemonic, kind):
    assert instr_mix.classify(mnemonic) == kind


def ev(seq, pc, mode, pid):
    return f"ev {seq} {seq} {seq} 0 SAMPLE pc_lo={pc & 0xffffffff} pc_hi={pc >> 32} mode={mode} pid={pid} ra_lo=0"


KERNEL_CODE = {0x80200000: "add", 0x80200004: "fcvt.s.d", 0x80200008: "bne"}
USER_CODE = {0x1000: "mul", 0x1004: "add", 0x1008: "flw"}
TRANSCRIPT = "\n".join([
    ev(0, 0x80200000, 0, 3),    # kernel add
    ev(1, 0x80200004, 0, 3),    # kernel fcvt.s.d
    ev(2, 0x80200000, 0, 0),    # an idle hart: left out
    ev(3, 0x1000, 1, 7),        # user mul
    ev(4, 0x1004, 1, 7),        # user add
    ev(5, 0x1008, 1, 7),        # user flw
    ev(6, 0x1010, 1, 7),        # a pc the ELF does not hold
    "ev 7 7 7 0 ITER_END worker=0 requests=1 tokens=1",
])


def test_samples_are_counted_by_kind_idle_left_out_unknown_pcs_counted_apart():
    counts, unknown = instr_mix.mix(instr_mix.kai_trace.parse(TRANSCRIPT), KERNEL_CODE, USER_CODE)
    assert dict(counts) == {"integer": 2, "convert rounding": 1, "multiply": 1, "memory": 1}
    assert unknown == 1
    # Without a user ELF every user sample is unknown.
    counts, unknown = instr_mix.mix(instr_mix.kai_trace.parse(TRANSCRIPT), KERNEL_CODE, None)
    assert dict(counts) == {"integer": 1, "convert rounding": 1} and unknown == 4


OPCOST = """\
$ opcost
opcost: ns per instruction, fastest of 3 runs of 2000 passes x 32 copies (real time)
add                0.10 ns     1.0x add   integer: inline host code
mul                0.50 ns     5.0x add   integer: inline host code
lw                 0.60 ns     6.0x add   load
bnez               1.00 ns    10.0x add   taken branch
fsgnjx.s           0.40 ns     4.0x add   sign bits
fadd.s             8.00 ns    80.0x add   soft float
fmadd.s           12.00 ns   120.0x add   soft float
fadd.d             3.00 ns    30.0x add   soft float
flt.s              6.00 ns    60.0x add   soft float compare
fcvt.s.l           4.00 ns    40.0x add   soft float conversion
fcvt.s.d          10.00 ns   100.0x add   soft float conversion, rounds
"""


def test_the_prediction_charges_each_kind_its_opcost_row():
    costs = instr_mix.opcost_costs(OPCOST)
    counts = instr_mix.Counter({"integer": 5, "multiply": 2, "memory": 2, "convert rounding": 1})
    lines = instr_mix.report(counts, 0, costs)
    # 0.5 x 0.10 + 0.2 x 0.50 + 0.2 x 0.60 + 0.1 x 10.00 = 1.27 ns, 12.70 adds.
    # Standard error: the costs' variance over the 10 samples,
    # 0.5 x 1.17^2 + 0.2 x 0.77^2 + 0.2 x 0.67^2 + 0.1 x 8.73^2 = 8.514, / 10, square root: 0.923.
    assert lines[-1] == "predicted real time per instruction: 1.270 ns +- 0.923 (12.70 adds)"
    assert any(line.startswith("multiply           20.0%     0.50    0.100") for line in lines), lines


def test_of_several_opcost_runs_each_row_takes_its_fastest():
    slower = OPCOST.replace("0.50 ns", "0.70 ns").replace("8.00 ns", "7.00 ns")
    costs = instr_mix.opcost_costs(OPCOST + slower)
    assert costs["mul"] == 0.50 and costs["fadd.s"] == 7.00 and costs["add"] == 0.10


def test_an_opcost_transcript_without_a_row_is_refused():
    with pytest.raises(SystemExit, match="no row for fmadd.s"):
        instr_mix.opcost_costs(OPCOST.replace("fmadd.s", "fnmadd.s"))


def test_a_missing_elf_is_named(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(TRANSCRIPT)
    r = subprocess.run(["/usr/bin/python3", TOOL, str(log), "--kernel", str(tmp_path / "gone.elf")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "gone.elf" in r.stderr
