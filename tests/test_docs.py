"""The documentation stands alone and cannot drift from the CLI.

- Every relative link in README.md, CONTRIBUTING.md, BENCHMARKS.md, docs/, fixtures/ and
  examples/
  names a file of this repository (and, with `#anchor`, a heading of that file, by
  GitHub's slug rule; a link whose text runs over a line break too); no link leaves the
  repository, and no page, nor any docstring or comment of the code, names a
  specification kept outside it.
- No tracked text file (markdown, Python, TOML, the CI script) cites an issue of this
  project by number: a clone has no tracker to follow it to.
- Every option that `extract --help` and `extract COMMAND --help` list (each `--long`
  and `-x` form) appears on that command's page, docs/commands/<command>.md, and every
  command has a page the README and the docs index link to.
- The README stays short: at most 300 lines.
"""

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest
import typer.main

from support.cli import invoke_extract

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
COMMANDS = DOCS / "commands"
README_LIMIT = 300


def markdown_files():
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "BENCHMARKS.md"]
    pages.append(REPO / "tests" / "README.md")
    for folder in (DOCS, REPO / "fixtures", REPO / "examples"):
        pages.extend(sorted(folder.rglob("*.md")))
    return pages


# Files this repository once cited that it does not hold (the specifications it was
# written from, a reference summary's old name): the docs say the same in their own words.
OUTSIDE = (
    "../shared",
    "shared/docs",
    "summary-spec",
    "blocks-spec",
    "budget-spec",
    "diff-spec",
    "trace-spec",
    "summary-vit-f8weight.json",
)


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO))


# ---- links --------------------------------------------------------------------------

# [text](target) and ![alt](target); the target ends at the first space or `)`
# (a title, `[a](b "t")`, is allowed). Reference-style links are not used here.
_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))"
    r"(?:\s+\"[^\"]*\")?\s*\)"
)
_FENCE = re.compile(r"^(`{3,}|~{3,})")
# A code span: a run of backquotes, then anything (line breaks too, within a paragraph)
# up to a run of the same length.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)")


def _prose(text: str) -> str:
    """The text with fenced code blocks emptied and inline code spans blanked, each line
    where it was (so an offset still gives the line number)."""
    fence, kept = None, []
    for line in text.split("\n"):
        opening = _FENCE.match(line.lstrip())
        if fence is None and opening:
            fence = opening.group(1)[0] * 3
        elif fence is not None:
            if line.lstrip().startswith(fence):
                fence = None
        else:
            kept.append(line)
            continue
        kept.append("")
    paragraphs = re.split(r"(\n[ \t]*\n)", "\n".join(kept))
    return "".join(
        _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), part) for part in paragraphs
    )


def links(path: Path):
    """(line number, target) of every inline link and image of a markdown file, a link
    whose text runs over a line break included."""
    text = _prose(path.read_text(encoding="utf-8"))
    for match in _LINK.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1) or match.group(2)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, every character
    that is not a letter, digit, `_`, `-` or space dropped, spaces made `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in "-_ " or category[0] in "LN" or category == "Mn":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def _raw_headings(path: Path) -> list:
    """The headings' text with code spans kept (the blanking above is for links only)."""
    text, fence, headings = path.read_text(encoding="utf-8"), None, []
    for line in text.split("\n"):
        opening = _FENCE.match(line.lstrip())
        if fence is None and opening:
            fence = opening.group(1)[0] * 3
            continue
        if fence is not None:
            if line.lstrip().startswith(fence):
                fence = None
            continue
        match = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            headings.append(match.group(1))
    return headings


def heading_anchors(path: Path) -> set:
    found, seen = set(), {}
    for heading in _raw_headings(path):
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else "{}-{}".format(slug, count))
    return found


def test_the_slug_rule_is_githubs():
    assert (
        github_slug("What compare, table and report trust") == "what-compare-table-and-report-trust"
    )
    assert github_slug("Without the SDK: `--no-pva`") == "without-the-sdk---no-pva"
    assert (
        github_slug("`extract` and `extract run`: summarise profiles")
        == "extract-and-extract-run-summarise-profiles"
    )
    assert (
        github_slug("Odd data that still gives a summary (exit 0)")
        == "odd-data-that-still-gives-a-summary-exit-0"
    )
    assert (
        github_slug("The step tables: `steps.csv` and `first-body.csv`")
        == "the-step-tables-stepscsv-and-first-bodycsv"
    )


def test_the_link_finder_finds_links_and_skips_code(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        'See [a](a.md), ![pic](img/p.png) and [b](b.md#x "title").\n'
        "`[not](code.md)`\n```\n[nor](fenced.md)\n```\n[c](<c d.md>)\n"
        "A [link over\ntwo lines](e.md#anchor) and `a span\nover two [lines](no.md)`.\n\n"
        "`an unclosed span\n\n[f](f.md)\n",
        encoding="utf-8",
    )
    assert list(links(page)) == [
        (1, "a.md"),
        (1, "img/p.png"),
        (1, "b.md#x"),
        (6, "c d.md"),
        (7, "e.md#anchor"),
        (13, "f.md"),
    ]


@pytest.mark.parametrize("page", markdown_files(), ids=_shown)
def test_every_link_resolves_inside_the_repository(page):
    assert page.is_file(), "{} is missing".format(_shown(page))
    problems = []
    for number, target in links(page):
        where = "{}:{}: {}".format(_shown(page), number, target)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto: ...
            if not target.lower().startswith(("https:", "http:", "mailto:")):
                problems.append(where + ": a scheme that is not a web address")
            continue
        file_part, _, anchor = target.partition("#")
        if file_part.startswith("/"):
            problems.append(where + ": an absolute path (GitHub resolves it elsewhere)")
            continue
        resolved = (page.parent / file_part).resolve() if file_part else page
        try:
            resolved.relative_to(REPO)
        except ValueError:
            problems.append(where + ": leaves the repository")
            continue
        if not resolved.exists():
            problems.append(where + ": no such file")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in heading_anchors(resolved):
            problems.append(where + ": no heading #{} in {}".format(anchor, _shown(resolved)))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", markdown_files(), ids=_shown)
def test_no_page_names_a_specification_outside_the_repository(page):
    text = page.read_text(encoding="utf-8")
    for outside in OUTSIDE:
        assert outside not in text, "{} names {}".format(_shown(page), outside)
    tracker = re.search(r"\b(issue|item)s? \d+", text, re.I)
    assert tracker is None, "{}: {!r}: a tracker number a reader cannot follow".format(
        _shown(page), tracker.group(0)
    )


def test_no_code_names_a_file_outside_the_repository():
    """The docstrings and comments of the code, the tests, the fixtures' generator and
    the benchmarks cite the docs, not files that are not here (this file aside)."""
    problems = []
    for folder in ("extractor", "tests", "fixtures", "bench"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            problems.extend("{}: {}".format(_shown(path), name) for name in OUTSIDE if name in text)
    assert not problems, "\n".join(problems)


# ---- issue numbers ------------------------------------------------------------------

# "issue 16", "Issues 11 to 14", "issue #3", an anchor's "issue-16", with the word just
# before it on the same line (to tell another project's issues apart).
_ISSUE_NUMBER = re.compile(r"(?:([\w.-]+?)(?:'s)?[ \t]+)?\bissues?(?:\s+|-)#?\d+", re.I)
# Other projects whose issues the files cite, each by its name written just before the
# word ("pytest-xdist issues 1323, 1378"): a reader can follow those to that tracker.
EXTERNAL_PROJECTS = ("pytest-xdist",)
_TEXT_SUFFIXES = (".md", ".py", ".toml")


def issue_numbers(text: str):
    """(line number, citation) of every issue cited by number that is not an issue of one
    of EXTERNAL_PROJECTS named just before it."""
    for match in _ISSUE_NUMBER.finditer(text):
        if (match.group(1) or "").lower() in EXTERNAL_PROJECTS:
            continue
        yield text.count("\n", 0, match.start()) + 1, " ".join(match.group(0).split())


def tracked_text_files():
    """The repository's markdown, Python and TOML files and its CI script: the files git
    tracks, or every such file outside dot-folders where there is no git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=str(REPO), stdout=subprocess.PIPE, check=True
        ).stdout.decode("utf-8")
        paths = [REPO / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = [
            path
            for path in REPO.rglob("*")
            if not any(part.startswith(".") for part in path.relative_to(REPO).parts[:-1])
        ]
        paths.append(REPO / ".ci" / "run")
    return sorted(
        path
        for path in paths
        if path.is_file() and (path.suffix in _TEXT_SUFFIXES or path == REPO / ".ci" / "run")
    )


def test_the_issue_number_finder_tells_this_projects_issues_from_others():
    text = (
        "see issue 16, below\n"
        "## Issues 11 to 14 merged\n"
        "[there](#issue-16-the-table-scan-thread)\n"
        "the target (issue #3)\n"
        "Issue 23 point 5\n"
        "(pytest-xdist issues 1323, 1378)\n"
        "pytest-xdist's issue 1323\n"
        "pytest-xdist, and issue 7 of ours\n"
        "an issue in the repository you got it from\n"
        "at eb4b031 (when issue\n16 was filed)\n"
    )
    assert list(issue_numbers(text)) == [
        (1, "see issue 16"),
        (2, "Issues 11"),
        (3, "issue-16"),
        (4, "issue #3"),
        (5, "Issue 23"),
        (8, "and issue 7"),
        (10, "when issue 16"),
    ]


def test_no_tracked_file_cites_an_issue_of_this_project_by_number():
    files = tracked_text_files()
    assert REPO / "pyproject.toml" in files and REPO / ".ci" / "run" in files
    problems = [
        "{}:{}: {!r}".format(_shown(path), number, citation)
        for path in files
        if path != Path(__file__).resolve()
        for number, citation in issue_numbers(path.read_text(encoding="utf-8"))
    ]
    assert not problems, "issue numbers a reader of a clone cannot follow:\n" + "\n".join(problems)


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_LIMIT, (
        "README.md has {} lines: at most {} (move detail to docs/)".format(lines, README_LIMIT)
    )


# ---- help against the pages ---------------------------------------------------------


def _commands() -> list:
    from extractor.cli import app

    return list(typer.main.get_command(app).commands)


def help_text(*words) -> str:
    """`extract WORDS... --help`, wide, so that no option is cut or wrapped."""
    result = invoke_extract(*words, "--help", env={"COLUMNS": "250", "TERMINAL_WIDTH": "250"})
    assert result.code == 0, result.stderr
    return result.stdout.decode("utf-8")


# An option as help prints it: `--long-name` or `-x`, not inside a word (`x-y`, `a--b`).
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*|-[A-Za-z])(?![\w-])")


def listed_options(text: str) -> set:
    """Every option a help text names: in its option table and in its descriptions."""
    return set(_OPTION.findall(text))


def declared_options(*words) -> set:
    """What the command declares (click's own record): the options help must list."""
    from extractor.cli import app

    command = typer.main.get_command(app)
    context = command.context_class(command, **command.context_settings)
    for word in words:
        command = command.commands[word]
        context = command.context_class(command, parent=context)
    found = set()
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            found.update(param.opts + param.secondary_opts)
    found.update(command.get_help_option_names(context))
    return found


def mentions(page_text: str, option: str) -> bool:
    return re.search(r"(?<![\w-]){}(?![\w-])".format(re.escape(option)), page_text) is not None


def test_the_option_finder_reads_helps_options():
    text = "│ --output  -o  FILE  One profile: '-' or nothing; a batch-run, x--y │"
    assert listed_options(text) == {"--output", "-o"}


def test_top_level_help_lists_every_command_and_each_has_a_page():
    text = help_text()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for command in _commands():
        assert re.search(r"│\s+{}\s".format(command), text), "extract --help lists " + command
        page = COMMANDS / "{}.md".format(command)
        assert page.is_file(), "{} has no page: {}".format(command, _shown(page))
        link = "commands/{}.md".format(command)
        assert "docs/" + link in readme, "README.md does not link " + link
        assert link in index, "docs/README.md does not link " + link


def test_top_level_options_are_on_the_default_commands_page():
    text = help_text()
    options = listed_options(text)
    assert declared_options() <= options, "extract --help hides an option"
    page = (COMMANDS / "run.md").read_text(encoding="utf-8")
    missing = sorted(o for o in options if not mentions(page, o))
    assert not missing, "docs/commands/run.md does not mention {}".format(", ".join(missing))


@pytest.mark.parametrize("command", _commands())
def test_every_option_help_lists_is_on_the_commands_page(command):
    text = help_text(command)
    options = listed_options(text)
    declared = declared_options(command)
    assert declared <= options, "extract {} --help does not list {}".format(
        command, ", ".join(sorted(declared - options))
    )
    page = COMMANDS / "{}.md".format(command)
    content = page.read_text(encoding="utf-8")
    missing = sorted(o for o in options if not mentions(content, o))
    assert not missing, "{} does not mention {} (listed by extract {} --help)".format(
        _shown(page), ", ".join(missing), command
    )


def test_each_command_page_links_the_bad_input_page():
    for command in _commands():
        page = COMMANDS / "{}.md".format(command)
        targets = [target for _, target in links(page)]
        assert any(t.split("#")[0] == "../errors.md" for t in targets), (
            "{} does not link ../errors.md".format(_shown(page))
        )
