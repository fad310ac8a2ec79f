"""Issue 17 items 8 and 9: no planted secret in any output whatever a policy does, and every output escaped for its medium."""

from __future__ import annotations

import csv
import re
import sqlite3

import pytest
import yaml
from reliability_cli import fleetchaos

import fleetchaos.catalogue as catalogue
from fleetchaos.escaping import csv_cell, markdown_text
from fleetchaos.files import UnsafePathError, write_text
from fleetchaos.sim.sanitise import PlantedSecrets


def test_no_planted_secret_in_any_output_whatever_a_policy_does(tmp_path):
    """A policy that puts the raw format's text (API keys, e-mails, paths, URLs) into its exceptions and its repr
    leaks none of it into results.json, tasks.csv, summary.md, report.html, history.db, --json stdout or stderr."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc["name"], doc["workload"]["tasks_per_day"] = "leaky", 60
    (tmp_path / "leaky.yaml").write_text(yaml.safe_dump(doc))
    out = fleetchaos("compare", "--scenario", "leaky.yaml", "--policies", "hostile_policies:Leaks,backoff",
                     "--errors", "raw", "--seeds", "2", "--jobs", "1", "--report", "rep", "--json", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "policy raised ValueError: could not handle" in out.stdout  # the policy did leak into its errors
    secrets = PlantedSecrets.for_run(1).all() + PlantedSecrets.for_run(2).all()
    outputs = {
        "stdout": out.stdout,
        "stderr": out.stderr,
        "history.db": (tmp_path / "history.db").read_bytes().decode("utf-8", "replace"),
    }
    for path in (tmp_path / "rep").iterdir():
        outputs[path.name] = path.read_bytes().decode("utf-8", "replace")
    assert {"results.json", "tasks.csv", "summary.md", "report.html"} <= set(outputs)
    leaked = {name: [s for s in secrets if s in text] for name, text in outputs.items()}
    assert all(not found for found in leaked.values()), leaked
    assert "[REDACTED]" in outputs["results.json"]


HOSTILE_TEXT = "<script>alert(1)</script> <iframe src=x></iframe> [click](javascript:alert(1)) [/] $\\frac{$"


def test_scenario_text_cannot_inject_html_links_formulas_or_markup(tmp_path):
    """A scenario whose name, description and template hold HTML, a javascript: link, a formula and Rich markup:
    exit 0, summary.md has no raw tag or link, report.html escapes it, tasks.csv starts no cell with a formula."""
    doc = {
        "name": "[/]evil[bold]$x$",
        "description": HOSTILE_TEXT,
        "reveals": "<img src=x onerror=alert(1)>",
        "workload": {
            "tasks_per_day": 40,
            "templates": [{"name": '=HYPERLINK("http://x")', "steps": [{"tool": "@cmd", "duration": {"mean_s": 30}}]}],
        },
        "faults": [{"kind": "network_blip", "probability": 0.3}],
    }
    text = yaml.safe_dump(doc)
    (tmp_path / "evil.yaml").write_text(text)
    out = fleetchaos("compare", "--scenario", "evil.yaml", "--seeds", "2", "--jobs", "1", "--policies", "backoff",
                     "--errors", "generic", "--report", "rep", "--label", "[/]", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    summary = _outside_fences((tmp_path / "rep" / "summary.md").read_text())  # a fenced block is literal text
    assert "&lt;script&gt;" in summary
    assert not re.search(r"<(script|iframe|img)", summary, re.I)
    assert "](javascript:" not in summary
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "<script>alert" not in page and "<iframe src" not in page and "<img src=x" not in page
    with (tmp_path / "rep" / "tasks.csv").open(newline="") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert any("HYPERLINK" in c for c in cells)
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
    listing = fleetchaos("history", cwd=tmp_path)
    assert listing.returncode == 0 and "[/]evil[bold]$x$" in listing.stdout, listing.stderr


def _outside_fences(markdown: str) -> str:
    """The Markdown without its fenced code blocks (their content is shown as text, never rendered)."""
    out, fence = [], None
    for line in markdown.splitlines():
        run = re.match(r"^(`{3,})", line)
        if fence is None and run:
            fence = run.group(1)
        elif fence is not None and line.startswith(fence) and not line.strip("`"):
            fence = None
        elif fence is None:
            out.append(line)
    return "\n".join(out)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "text, unsafe",
    [
        ("<script>x</script>", "<script"),
        ("[a](javascript:alert(1))", "](javascript"),
        ("[x]: javascript:alert(1)", r"(?<!\\)\]: javascript"),
        ("&lt;script&gt;", "&lt;script"),
    ],
)
def test_markdown_text_leaves_no_tag_link_or_entity(text, unsafe):
    """Escaped Markdown keeps the characters visible but forms no HTML tag, link, link definition or entity."""
    assert not re.search(unsafe if unsafe.startswith("(?") else re.escape(unsafe), markdown_text(text))


def test_csv_cells_never_start_a_formula_but_numbers_stay_numbers():
    """Strings starting with = + - @ tab or CR get a leading quote; numbers (negative included) are unchanged."""
    for text in ("=1+1", "+1", "-1+cmd", "@SUM(A1)", "\tx"):
        assert csv_cell(text) == "'" + text
    assert csv_cell("\rx") == "'\nx"  # quoted, and its carriage return a line feed (next test)
    assert csv_cell(-1.5) == -1.5 and csv_cell("plain") == "plain"


def test_a_carriage_return_never_splits_a_csv_row():
    """The csv module writes a bare carriage return unquoted, and every reader then splits the row: a cell's
    carriage returns become line feeds, which it quotes."""
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([csv_cell(t) for t in ("a\rb", "c\r\nd", "=\r", 1.5)])
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [["a\nb", "c\nd", "'=\n", "1.5"]]


def test_report_writes_never_follow_a_symlink_out_of_the_folder(tmp_path):
    """A symlinked file is replaced, not written through; a symlinked sub-folder leading out is refused."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    folder = tmp_path / "rep"
    folder.mkdir()
    (folder / "summary.md").symlink_to(outside)
    write_text(folder / "summary.md", "report", root=folder)
    assert outside.read_text() == "precious" and not (folder / "summary.md").is_symlink()
    (folder / "seed-1").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="outside the folder"):
        write_text(folder / "seed-1" / "results.json", "{}", root=folder)
    assert not (tmp_path / "results.json").exists()


def test_an_empty_report_folder_is_refused(tmp_path):
    """`--report ""` is a usage error, not the working directory."""
    out = fleetchaos("run", "--report", "", cwd=tmp_path)
    assert out.returncode == 2 and "give a folder name" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_history_rows_hold_the_sanitised_error_text(tmp_path, tiny):
    """The stored result of a leaking policy holds its redacted message, never the raw text."""
    out = fleetchaos(
        "run", "--scenario", str(tiny), "--policy", "hostile_policies:Leaks", "--errors", "raw", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    (result,) = sqlite3.connect(tmp_path / "history.db").execute("SELECT result FROM runs").fetchone()
    assert "could not handle" in result and PlantedSecrets.for_run(1).count_in(result) == 0


_SEQUENCES = "\x1b[2J\x1b]0;pwned\x07\x9b31m\u202e"  # clear screen, window title, a one-byte CSI, a bidi override


def test_escape_sequences_in_scenario_text_are_refused_naming_each_field(tmp_path):
    """A scenario whose name, description, reveals, template and tool names hold escape sequences: exit 2, a line per
    field with the sequence written out (\\x1b), and no raw control character on either stream."""
    doc = yaml.safe_load(catalogue.path("default").read_text())
    doc.update(name="evil" + _SEQUENCES, description="d" + _SEQUENCES, reveals="r" + _SEQUENCES)
    doc["workload"]["templates"] = [
        {"name": "t\x1b[8m", "steps": [{"tool": "tool\x1b[8mhidden", "duration": {"mean_s": 5}}]}
    ]
    doc["faults"] = []
    (tmp_path / "evil.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    for args in (["run", "--scenario", "evil.yaml", "--no-history"], ["scenarios", "validate", "evil.yaml"]):
        out = fleetchaos(*args, cwd=tmp_path)
        assert out.returncode == 2, out.stdout[-300:]
        for field in ("name", "description", "reveals", "workload.templates[0].name", "steps[0].tool"):
            assert f"{field}: '" in out.stderr and "holds the control character \\x1b" in out.stderr, field
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", out.stdout + out.stderr)


def test_no_terminal_path_prints_a_control_character_from_a_label_or_a_results_file(tmp_path, tiny):
    """Text that is not a scenario's (a --label, a results file's scenario and policy names) reaches the terminal
    written out, through every table and message: history, history diff, report."""
    out = fleetchaos("run", "--scenario", str(tiny), "--label", "lab" + _SEQUENCES, "--report", "rep", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    results = (tmp_path / "rep" / "results.json").read_text()
    doc = yaml.safe_load(results)
    doc["scenario"] = doc["policy"] = "name" + _SEQUENCES
    import json

    (tmp_path / "evil.json").write_text(json.dumps(doc))
    outputs = {}
    for args in (["history"], ["history", "latest"], ["history", "diff", "evil.json", "evil.json"],
                 ["history", "diff", "latest", "evil.json"], ["report", "evil.json", "-o", "again"]):  # fmt: skip
        out = fleetchaos(*args, cwd=tmp_path, env={"COLUMNS": "200"})
        assert out.returncode in (0, 2), (args, out.stderr)
        outputs[" ".join(args)] = out.stdout + out.stderr
    assert "lab\\x1b[2J" in outputs["history"]
    raw = {k: sorted(set(re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", v))) for k, v in outputs.items()}
    assert not any(raw.values()), raw


def test_terminal_text_writes_out_what_a_terminal_would_act_on():
    """terminal_text, one_line and rich_text write out C0/C1 controls, DEL and bidi overrides; tabs, line feeds and
    other non-ASCII text stay."""
    from fleetchaos.escaping import one_line, rich_text, terminal_text

    assert terminal_text("a\x1b[31mb\x07\x7f\x9b\u202eé\tz\n") == "a\\x1b[31mb\\x07\\x7f\\x9b\\u202eé\tz\n"
    assert one_line("x\x1b]0;t\x07\ny") == "x\\x1b]0;t\\x07 y"
    assert rich_text("[b]\x1b[2J").plain == "[b]\\x1b[2J"
