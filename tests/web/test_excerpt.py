import gzip
from pathlib import Path

from goodput_agent.web.excerpt import parse_locator, source_view


def test_locators() -> None:
    loc = parse_locator("nodes/n3/kern.log:14-15")
    assert loc is not None and (loc.path, loc.first, loc.last) == ("nodes/n3/kern.log", 14, 15)
    loc = parse_locator("logs/rank3.log:7")
    assert loc is not None and (loc.path, loc.first, loc.last) == ("logs/rank3.log", 7, 7)
    assert parse_locator("metrics/vllm.om.gz [histogram_quantile(0.9, x) incident 1:2]") is None
    assert parse_locator("t.json.gz [step 4: ProfilerStep#4 @ 5 us]") is None
    assert parse_locator("a.log:9-3") is None and parse_locator("a.log:0") is None


def _bundle(tmp_path: Path) -> Path:
    root = tmp_path / "b"
    (root / "logs").mkdir(parents=True)
    lines = [f"line {i}" for i in range(1, 41)]
    lines[19] = "line 20 password=hunter2 failed"
    (root / "logs" / "r.log").write_text("\n".join(lines) + "\n")
    with gzip.open(root / "logs" / "z.log.gz", "wt") as fh:
        fh.write("a\nb\nc\n")
    return root


def test_context_around_the_matched_lines_redacted(tmp_path: Path) -> None:
    root = _bundle(tmp_path)
    v = source_view(str(root), "logs/r.log:20-21", "line 20 password=[REDACTED] failed")
    assert v.origin == "bundle" and not v.differs
    assert [ln.number for ln in v.lines] == list(range(12, 30))
    assert [ln.number for ln in v.lines if ln.matched] == [20, 21]
    assert v.lines[8].text == "line 20 password=[REDACTED] failed"  # secrets stay masked
    z = source_view(str(root), "logs/z.log.gz:2", "b", context=1)
    assert [(ln.number, ln.text, ln.matched) for ln in z.lines] == [
        (1, "a", False), (2, "b", True), (3, "c", False)]


def test_relative_targets_resolve_from_the_server_directory(tmp_path: Path) -> None:
    _bundle(tmp_path)
    v = source_view("b", "logs/r.log:3", "line 3", cwd=tmp_path)
    assert v.origin == "bundle" and [ln.text for ln in v.lines if ln.matched] == ["line 3"]


def test_the_stored_excerpt_when_the_file_cannot_be_used(tmp_path: Path) -> None:
    root = _bundle(tmp_path)
    gone = source_view(str(tmp_path / "nope"), "logs/r.log:3", "stored text")
    assert gone.origin == "ledger" and [ln.text for ln in gone.lines] == ["stored text"]
    escape = source_view(str(root), "../../etc/passwd:1", "x")
    assert escape.origin == "ledger"  # a locator never leaves the bundle
    assert source_view(str(root), "/etc/passwd:1", "x").origin == "ledger"
    short = source_view(str(root), "logs/r.log:400", "x")
    assert short.origin == "ledger" and "fewer than 400 lines" in short.why
    query = source_view(str(root), "metrics/m.om [rate(x) 10:00-11:00]", "x = 3")
    assert query.origin == "ledger" and "not a file and line" in query.why
    changed = source_view(str(root), "logs/r.log:5", "something else was here")
    assert changed.origin == "bundle" and changed.differs
