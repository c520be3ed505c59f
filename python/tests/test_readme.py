"""The Python page's example (docs/python.md) runs as written."""

import re

from conftest import REPO


def test_readme_python_example_runs(capsys):
    text = (REPO / "docs" / "python.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "docs/python.md", "exec"), {})
    assert capsys.readouterr().out.strip()
