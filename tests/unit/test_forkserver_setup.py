"""Sessions that start from one configuration the fork-server prepared (presession.py).

Real runs under bubblewrap: what a session says must be what a fresh fork running all of
pytest says, and a configuration a fork could not copy faithfully is never shared (the
requests go to children of their own instead).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from pytest_critic22.execution import forkserver as forkrun
from pytest_critic22.execution.forkserver import ForkRequest

CONFTEST = """
    import os
    import pytest

    import logging
    logging.basicConfig()  # a handler that keeps the stderr of the conftest's import

    IMPORTED_BY = os.getpid()
    print("conftest says hello on import")  # pytest's capture holds it for the first test
    CONFIGURED = []

    def pytest_configure(config):
        CONFIGURED.append(1)

    @pytest.fixture
    def configured():
        return list(CONFIGURED)
"""


MODULE = """
    import os, sys
    import pytest

    from conftest import IMPORTED_BY

    def test_prints_and_fails():
        print("conftest imported by", IMPORTED_BY, "this module is NAME")
        os.write(1, b"fd-level write\\n")
        assert False

    def test_capfd(capfd):
        os.write(1, b"xyz")
        assert capfd.readouterr().out == "xyz"

    def test_logging_goes_where_it_went_on_import(capfd):
        import logging
        logging.getLogger("x").warning("hello")
        assert capfd.readouterr().err == ""  # the handler writes to pytest's capture

    def test_a_subprocess_inherits_no_capture_descriptor():
        import subprocess
        code = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
        run = subprocess.run([sys.executable, "-c", code], close_fds=False, capture_output=True)
        assert max(eval(run.stdout)) <= 3  # 0-2 and the listing's own

    def test_stdin_is_not_readable():
        with pytest.raises(OSError):
            input()

    def test_configured_in_this_session_only(configured):
        assert configured == [1]

    def test_its_own_arguments(request):
        assert request.config.args == ["tests/NAME.py"]
        assert "tests/NAME.py" in request.config.invocation_params.args
        assert sys.argv[0].endswith("__main__.py") and sys.argv[-1] == "tests/NAME.py"
        assert request.config.getoption("critic22_attempts") == ATTEMPTS
        assert not [m for m in sys.modules if m.startswith("test_") and m != "NAME"]

    def test_flaky_in_its_session():
        os.environ["SEEN"] = os.environ.get("SEEN", "") + "x"
        assert os.environ["SEEN"] == "xx"
"""


def _tree(tmp_path: Path, conftest: str = CONFTEST, ini: str = "") -> Path:
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "conftest.py").write_text(textwrap.dedent(conftest))
    for name, attempts in (("test_a", 2), ("test_b", 1)):
        text = MODULE.replace("NAME", name).replace("ATTEMPTS", str(attempts))
        (tree / "tests" / f"{name}.py").write_text(textwrap.dedent(text))
    if ini:
        (tree / "pytest.ini").write_text(ini)
    return tree


def test_only_sessions_of_existing_files_in_one_folder_share_a_configuration(
    tmp_path: Path,
) -> None:
    tree = _tree(tmp_path)
    (tree / "other").mkdir()
    (tree / "other" / "test_c.py").write_text("")

    def one(*args: tuple[str, ...]) -> bool:
        return forkrun._one_configuration(tree, [ForkRequest(a) for a in args])

    assert one(("tests/test_a.py",), ("tests/test_b.py::test_capfd",))
    assert not one(("tests/test_a.py",), ("other/test_c.py",))
    assert not one(("tests/test_a.py", "-k", "x"))
    assert not one(("tests/test_a.py",), ("tests/test_missing.py",))
