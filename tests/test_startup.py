"""Start-up cost: an SWF replay loads no heavy library that it does not use.

Every installed plugin is loaded at start-up, so a module-level import of a heavy library in
any plugin is paid by every run (scipy.optimize alone costs about 0.4 CPU-s, more than the
rest of a one-lease replay). Libraries are imported where they are used instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what a replay of an SWF trace with etc/sample.ini never needs
HEAVY = ("scipy", "lxml", "matplotlib", "pandas", "pvlib", "deap", "ssl", "http.client")

PROGRAM = """
import sys
from lease_manager.cli import main
code = main(sys.argv[1:])
heavy = {heavy!r}
print(",".join(m for m in heavy if m in sys.modules))
sys.exit(code)
"""


def test_a_one_lease_swf_replay_imports_no_heavy_library(tmp_path: Path) -> None:
    trace = ROOT / "traces" / "sdsc-blue-30days.swf"
    first = next(line for line in trace.read_text().splitlines()
                 if line.strip() and not line.startswith(";"))
    one = tmp_path / "one.swf"
    one.write_text(first + "\n")
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(heavy=HEAVY), "simulate",
         str(ROOT / "etc" / "sample.ini"), "--set", f"tracefile.tracefile={one}", "--quiet",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert loaded == "", f"start-up imported {loaded}"
