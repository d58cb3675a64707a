"""The site's figures (docs/assets/figures/, made from real runs by docs/figures/make.py): every
image a page shows is there, is a picture (not an empty or truncated file) and is small; every
committed figure is shown by a page; the pages issue 56 names each show one. No training: the
figures are committed files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

DOCS = ROOT / "docs"
FIGURES = DOCS / "assets" / "figures"
PAGES = sorted(DOCS.rglob("*.md"))
# ![alt text, which may run over lines](path "title") and <img src="path">
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)|<img\s[^>]*src=[\"']([^\"']+)", re.S)
LARGEST = 200_000  # bytes: the site is read offline, and the repository keeps every version


def images(page: Path) -> list[Path]:
    """The local images a page shows, resolved from the page's folder."""
    found = []
    for match in IMAGE.finditer(page.read_text()):
        target = (match.group(1) or match.group(2)).split("#")[0]
        if re.match(r"[a-z]+:", target):  # http:, data:
            continue
        found.append((page.parent / target).resolve())
    return found


def problem(path: Path) -> str | None:
    """What is wrong with an image file, or None: missing, empty, not the picture its name
    says, too large."""
    if not path.is_file():
        return "missing"
    data = path.read_bytes()
    if not data:
        return "empty"
    suffix = path.suffix.lower()
    if suffix == ".png":
        valid = data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")
    elif suffix == ".gif":
        valid = data[:6] in (b"GIF87a", b"GIF89a") and data.endswith(b";")
    elif suffix == ".svg":
        text = data.decode("utf-8", "replace")
        valid = "<svg" in text[:1000] and text.rstrip().endswith("</svg>")
    elif suffix in (".jpg", ".jpeg"):
        valid = data.startswith(b"\xff\xd8") and data.rstrip().endswith(b"\xff\xd9")
    else:
        return f"not an image format the site shows ({suffix})"
    if not valid:
        return f"not a whole {suffix[1:].upper()} file"
    if len(data) > LARGEST:
        return f"{len(data):,} bytes, more than {LARGEST:,}"
    return None


def shown() -> dict[Path, list[Path]]:
    return {page: images(page) for page in PAGES}


def test_every_image_a_page_shows_is_a_whole_small_picture():
    checked = 0
    for page, paths in shown().items():
        for path in paths:
            found = problem(path)
            assert found is None, f"{page.relative_to(ROOT)} shows {path}: {found}"
            checked += 1
    assert checked >= 5


def test_every_committed_figure_is_shown_by_a_page():
    named = {path for paths in shown().values() for path in paths}
    for figure in FIGURES.iterdir():
        assert figure.resolve() in named, f"{figure.relative_to(ROOT)} is on no page"


@pytest.mark.parametrize(
    "page",
    [
        "index.md",
        "guides/rl/index.md",
        "guides/sweeps-tracking.md",
        "guides/debugging.md",
        "guides/language-models.md",
    ],
)
def test_the_pages_that_need_one_show_a_figure_and_the_command_that_made_it(page):
    """The home page, the RL guide, the sweeps, the debugging and the language-models guides
    each show a figure of a real run, and name the script that made it. (The RL guide may
    become a folder of pages.)"""
    path = DOCS / page
    pages = [path] if path.exists() else sorted(path.with_suffix("").rglob("*.md"))
    assert pages, page
    text = "".join(p.read_text() for p in pages)
    assert any(images(p) for p in pages), f"{page} shows no figure"
    assert "docs/figures/make.py" in text, f"{page} does not say what made its figure"


@pytest.mark.parametrize(
    ("name", "content", "found"),
    [
        ("a.png", None, "missing"),
        ("a.png", b"", "empty"),
        ("a.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 20, "not a whole PNG file"),
        ("a.gif", b"GIF89a" + b"\0" * 20, "not a whole GIF file"),
        ("a.svg", b"<svg xmlns='http://www.w3.org/2000/svg'>", "not a whole SVG file"),
        ("a.svg", b"<svg xmlns='http://www.w3.org/2000/svg'></svg>\n", None),
        ("a.gif", b"GIF89a" + b"\0" * LARGEST + b";", f"{LARGEST + 7:,} bytes, more than"),
    ],
)
def test_the_check_tells_a_missing_empty_or_broken_figure(tmp_path, name, content, found):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    result = problem(path)
    if found is None:
        assert result is None
    else:
        assert result is not None and result.startswith(found), result


def paragraph(path: Path, start: str) -> str:
    """The paragraph of a page that begins with `start`, its lines joined."""
    text = path.read_text()
    begin = text.index(start)
    end = text.find("\n\n", begin)
    return " ".join(text[begin : end if end >= 0 else len(text)].split())


def test_the_home_caption_and_the_readme_tell_of_the_same_run():
    """The home page's caption and the demo's paragraph in the README and in getting started
    give the same times and the same validation values, and the values are the last of the
    drawn run's file (rounded to 3 decimals)."""
    import json

    rows = [json.loads(line) for line in
            (DOCS / "figures/data/shapes_unet.metrics.jsonl").read_text().splitlines()]  # fmt: skip
    final = [r for r in rows if "val_mean_iou" in r][-1]
    drawn = {f"{final['val_pixel_accuracy']:.3f}", f"{final['val_mean_iou']:.3f}"}
    texts = {
        "index.md": paragraph(DOCS / "index.md", "*`loopgen render examples/shapes_unet.py"),
        "README.md": paragraph(ROOT / "README.md", "The demo trains 6 epochs"),
        "getting-started.md": paragraph(DOCS / "getting-started.md", "The demo trains 6 epochs"),
    }
    for page, text in texts.items():
        assert set(re.findall(r"\b0\.\d{3}\b", text)) == drawn, (page, drawn, text)
        assert set(re.findall(r"\b(\d+) s\b", text)) == {"73", "214"}, (page, text)
