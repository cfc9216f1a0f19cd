"""The pointer alignment plans are chosen for: the largest power of two up to 256 dividing an address."""

import pathlib
import re

from nvmathx._core.alignment import ALIGNMENT_OF_LOW_BYTE, pointer_alignment


def test_the_table_and_the_function_agree_with_the_definition():
    for ptr in list(range(0, 1025)) + [0x7F0000001000, 0x7F0000001010, 0x7F0000001002, 2**48 + 128]:
        expected = 256 if ptr % 256 == 0 else max(p for p in (1, 2, 4, 8, 16, 32, 64, 128) if ptr % p == 0)
        assert pointer_alignment(ptr) == ALIGNMENT_OF_LOW_BYTE[ptr & 255] == expected, ptr


def test_the_rule_is_written_once():
    """No module spells the alignment out again (it is the table's or the function's)."""
    package = pathlib.Path(__file__).parents[2] / "nvmathx"
    spelled = re.compile(r"&\s*-\s*\w+\s+or\s+256|&\s*255\s+and\b")
    offenders = [str(path) for path in package.rglob("*.py") if spelled.search(path.read_text())]
    assert offenders == []
