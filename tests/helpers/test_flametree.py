"""Unit tests of flametree.py (the HTML flame graph's call tree and page)
and progress.py (progress of a long read of a recording)."""
import io
import json
import os
import sys
import unittest

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyperf-run-helpers")
sys.path.insert(0, HELPERS)

import flametree  # noqa: E402
import progress  # noqa: E402

TEMPLATE = ("<html><head><title>Flame Graph</title></head><body><script>"
            "const stacks = [/** @flamegraph_json **/];\n"
            "const options = [/** @options_json **/];</script></body></html>")
LABELS = {0: "py::main:/a.py", 1: "py::foo:/a.py", 2: "long_mul", 3: "sys_read", 4: "py::bar:/a.py"}


def tree(stacks):
    root = flametree.build(stacks, LABELS.get, lambda i: "kernel" if i == 3 else "")
    return json.loads(flametree.encode(root).replace("<\\/", "</"))


class TreeTest(unittest.TestCase):
    def test_counts_and_shape(self):
        t = tree([[0, 1, 2], [0, 1, 2], [0, 1], [0, 4, 3]])
        self.assertEqual((t["n"], t["l"], t["v"]), ("all", "root", 4))
        (main,) = t["c"]
        self.assertEqual((main["n"], main["v"]), ("py::main:/a.py", 4))
        foo, bar = main["c"]  # in order of first sight
        self.assertEqual((foo["n"], foo["v"], bar["n"], bar["v"]), ("py::foo:/a.py", 3, "py::bar:/a.py", 1))
        self.assertEqual([(c["n"], c["v"], c["c"]) for c in foo["c"]], [("long_mul", 2, [])])
        self.assertEqual((bar["c"][0]["n"], bar["c"][0]["l"]), ("sys_read", "kernel"))

    def test_deep_tree_needs_no_recursion(self):
        depth = 20 * sys.getrecursionlimit()
        labels = lambda i: "f%d" % i  # noqa: E731
        root = flametree.build([list(range(depth))], labels, lambda i: "")
        text = flametree.encode(root)
        self.assertEqual(text.count('"v":1'), depth + 1)
        self.assertTrue(text.endswith("]}" * (depth + 1)))

    def test_no_samples_is_an_empty_root(self):
        self.assertEqual(tree([]), {"n": "all", "l": "root", "v": 0, "c": []})

    def test_script_end_in_a_name_does_not_end_the_page_script(self):
        root = flametree.build([[0]], lambda i: "py::<lambda>:</script><b>", lambda i: "")
        page = flametree.page(TEMPLATE, root, "t", "ctx </script>")
        self.assertEqual(page.count("</script>"), 1)
        self.assertIn("py::<lambda>:<\\/script><b>", page)


class PageTest(unittest.TestCase):
    def test_slots_and_title_are_filled(self):
        root = flametree.build([[0, 1]], LABELS.get, lambda i: "")
        page = flametree.page(TEMPLATE, root, "pyperf-run: rec <1>", "DATA\nsummary")
        self.assertIn("<title>pyperf-run: rec &lt;1&gt;</title>", page)
        stacks = page.split("const stacks = [", 1)[1].split("];", 1)[0]
        self.assertEqual(json.loads(stacks)["c"][0]["c"][0]["n"], "py::foo:/a.py")
        options = json.loads(page.split("const options = [", 1)[1].split("];", 1)[0])
        self.assertEqual(options, {"colorscheme": "blue-green", "context": "DATA\nsummary"})

    def test_not_a_template(self):
        with self.assertRaises(ValueError):
            flametree.page("<html></html>", flametree.build([], str, str), "t", "c")


class Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


HEADER = """# ========
# captured on    : Wed Dec  2 19:49:16 2026
# time of first sample : 27288.475547
# time of last sample : 27298.475547
# sample duration :  10000.000 ms
"""


class ProgressTest(unittest.TestCase):
    def test_sample_times_from_the_header(self):
        self.assertEqual(progress.sample_times(HEADER.splitlines()), (27288.475547, 27298.475547))
        self.assertIsNone(progress.sample_times(["# time of first sample : 5.0"]))
        self.assertIsNone(progress.sample_times(["# time of first sample : 5.0", "# time of last sample : 5.0"]))

    def test_quiet_for_a_short_read(self):
        out, clock = io.StringIO(), Clock()
        p = progress.Progress("perf.jit.data", (0.0, 10.0), out, clock)
        clock.now += progress.DELAY - 0.1
        p.update(64, 5.0)
        p.finish(100)
        self.assertEqual(out.getvalue(), "")

    def test_share_from_sample_time_then_a_final_line(self):
        out, clock = io.StringIO(), Clock()
        p = progress.Progress("perf.jit.data", (10.0, 20.0), out, clock)
        clock.now += progress.DELAY
        p.update(640, 12.5)
        clock.now += 1.0
        p.update(700, 13.0)  # within QUIET_EVERY of the last line: nothing
        clock.now += progress.QUIET_EVERY
        p.update(1280, 19.99)
        p.finish(1300)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines, [
            "pyperf-run: reading perf.jit.data: 25%, 640 samples so far",
            "pyperf-run: reading perf.jit.data: 99%, 1280 samples so far",
            "pyperf-run: read perf.jit.data: 1300 samples in %.0f s" % (progress.DELAY + 1 + progress.QUIET_EVERY)])

    def test_without_times_counts_samples(self):
        out, clock = io.StringIO(), Clock()
        p = progress.Progress("perf.data", None, out, clock)
        clock.now += progress.DELAY
        p.update(64, None)
        self.assertEqual(out.getvalue(), "pyperf-run: reading perf.data: 64 samples so far\n")

    def test_terminal_rewrites_one_line(self):
        class Tty(io.StringIO):
            def isatty(self):
                return True
        out, clock = Tty(), Clock()
        p = progress.Progress("perf.data", (0.0, 1.0), out, clock)
        clock.now += progress.DELAY
        p.update(64, 0.5)
        clock.now += progress.TTY_EVERY
        p.update(128, 0.75)
        p.finish(130)
        text = out.getvalue()
        self.assertEqual(text.count("\n"), 1)
        self.assertTrue(text.startswith("\rpyperf-run: reading perf.data: 50%, 64 samples so far\033[K\r"))


if __name__ == "__main__":
    unittest.main()
