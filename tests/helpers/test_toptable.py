"""Unit tests of toptable.py: pyperf-run report --top's self and total
shares per function."""
import os
import sys
import unittest

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyperf-run-helpers")
sys.path.insert(0, HELPERS)

import toptable  # noqa: E402

NAMES = {0: "main", 1: "foo", 2: "long_mul", 3: "rec"}
WHERE = {0: "/a.py:1", 1: "/a.py:5", 2: "python3.11", 3: "/a.py:9"}


class TableTest(unittest.TestCase):
    def test_self_is_the_leaf_total_is_anywhere(self):
        rows = toptable.table([[0, 1, 2], [0, 1, 2], [0, 1], [0]], NAMES.get)
        self.assertEqual(rows, [(2, 2, 2), (1, 4, 0), (1, 3, 1)])  # equal self: more total first

    def test_recursion_counts_once_per_sample(self):
        rows = toptable.table([[0, 3, 3, 3], [0, 3]], NAMES.get)
        self.assertEqual(dict((i, (own, total)) for own, total, i in rows), {3: (2, 2), 0: (0, 2)})

    def test_ties_sort_by_total_then_name(self):
        rows = toptable.table([[0, 1], [0, 2], [3]], NAMES.get)
        self.assertEqual([i for _, _, i in rows], [1, 2, 3, 0])  # foo, long_mul, rec, then main

    def test_empty_stacks_are_skipped(self):
        self.assertEqual(toptable.table([[], [1]], NAMES.get), [(1, 1, 1)])


class RenderTest(unittest.TestCase):
    def test_lines_and_the_cut(self):
        rows = toptable.table([[0, 1, 2], [0, 1, 2], [0, 1], [0]], NAMES.get)
        lines = toptable.render(rows, 4, NAMES.get, WHERE.get, 2)
        self.assertEqual(lines, [
            "   self   total  function (file:line or binary)",
            "  50.0%   50.0%  long_mul  python3.11",
            "  25.0%  100.0%  main  /a.py:1",
            "... 1 more functions (--native: every frame; --folded FILE: every stack)"])

    def test_no_cut_line_when_everything_fits(self):
        lines = toptable.render([(1, 1, 1)], 1, NAMES.get, WHERE.get, 30)
        self.assertEqual(lines[1:], [" 100.0%  100.0%  foo  /a.py:5"])


if __name__ == "__main__":
    unittest.main()
