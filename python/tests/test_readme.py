"""The README's "Use from Python" example runs as written."""

import re

from conftest import REPO


def test_readme_python_example_runs(capsys):
    text = (REPO / "README.md").read_text()
    section = text.split("## Use from Python", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md (Use from Python)", "exec"), {})
    assert capsys.readouterr().out.strip()
