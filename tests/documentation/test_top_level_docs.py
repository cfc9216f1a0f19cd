"""README.md and CHANGELOG.md stay what they are meant to be: short, pointing into the docs site,
and citing only files that the repository holds."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOP_LEVEL = ("docs/", "examples/", "scripts/", "tests/", "benchmarks/", "nvmathx/", ".ci/")
# `code` spans and link targets that name a path: under a top-level folder, or a file by its extension
CITED = re.compile(r"`([^`\s]+)`|\]\(([^)\s]+)\)")
PLACEHOLDERS = re.compile(r"<[^<>/]+>|\b(SUITE|NAME|CASE|N)\b")


def cited_paths(text):
    for match in CITED.finditer(text):
        token = (match.group(1) or match.group(2)).split("#", 1)[0]
        if "://" in token:
            continue
        if token.startswith(TOP_LEVEL) or re.fullmatch(r"[\w./-]+\.(md|rst|py|json|toml)", token):
            yield token


@pytest.mark.parametrize("name", ["README.md", "CHANGELOG.md", "benchmarks/README.md"])
def test_every_cited_file_is_in_the_repository(name):
    paths = list(cited_paths((ROOT / name).read_text()))
    assert paths
    for path in paths:
        pattern = PLACEHOLDERS.sub("*", path)
        base = ROOT / pathlib.Path(name).parent
        assert any(base.glob(pattern)) or any(ROOT.glob(pattern)), f"{name} cites {path}, which is not here"


def test_cited_paths_are_found():
    text = "see `docs/guide/fft.rst`, [the guide](docs/guide/torch.rst#notes), `scripts/gpu-check [SUITE]`, `x.y`"
    assert list(cited_paths(text)) == ["docs/guide/fft.rst", "docs/guide/torch.rst"]


def test_readme_is_short_and_names_the_test_command():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert ".ci/run" in text and "python -m pytest" in text


def release_sections(text):
    """``{heading: lines}`` of each ``## [version]`` section."""
    sections = re.split(r"^(## \[.*)$", text, flags=re.M)
    return dict(zip(sections[1::2], (body.splitlines() for body in sections[2::2])))


def test_changelog_keeps_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text()
    sections = release_sections(text)
    assert "## [0.1.0] - Unreleased" in sections
    for heading, lines in sections.items():
        assert len(lines) <= 200, heading
        kinds = [line[4:] for line in lines if line.startswith("### ")]
        assert set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security", "Known issues"}, kinds
        bullets = [line for line in lines if line.startswith("- ")]
        continued = [line for line in lines if line.startswith("  ")]
        assert bullets
        # one line per change, except the known issues (up to three lines, see below)
        known = lines[lines.index("### Known issues"):] if "### Known issues" in lines else []
        assert all(line in known for line in continued), [line for line in continued if line not in known]


def test_each_known_issue_is_short_and_points_to_the_docs():
    lines = (ROOT / "CHANGELOG.md").read_text().splitlines()
    known = lines[lines.index("### Known issues") + 1:]
    entries = []
    for line in known:
        if line.startswith("#"):
            break
        if line.startswith("- "):
            entries.append([line])
        elif line.startswith("  ") and entries:
            entries[-1].append(line)
    assert entries
    for entry in entries:
        assert len(entry) <= 3, entry[0]
        assert "](docs/" in " ".join(entry), entry[0]
