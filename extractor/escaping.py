"""One escaping rule per output format, for text that comes from outside.

Program and compute set names come from a profile, recording labels from folder names,
stage labels from a rules file: anyone who can hand over a profile, a folder or a rules
file chooses them. Every renderer passes each such piece of text through the function
here for its format, and keeps no copy of a rule of its own:

- `csv_text_cell`: a CSV text cell (spreadsheet formulas, OWASP's "CSV injection");
  `csv_cell`: any CSV field, text through `csv_text_cell`, numbers as they are;
- `markdown_cell`, `markdown_code`: a cell of a GitHub-flavoured markdown table, as text
  or as a code span;
- `xml_text`, `xml_attribute`: XML 1.0 character data and attribute values (the SVG
  chart, the JUnit report);
- `html_text`: text and attribute values in the report's HTML written outside its
  templates (its inline chart), as Jinja2's autoescaping writes the rest of the page;
- `terminal_text`: text printed on a terminal; `terminal_output`: a whole output (a
  command's CSV, markdown, JSON...) written to standard output when that is a terminal,
  line by line. An output written to a file keeps its exact bytes.

Where a character must not be written as it is, it is written as a visible escape in
Python's spelling: `\\n`, `\\r`, `\\t`, `\\xNN` below U+0100, `\\uNNNN` above (every
character escaped here is in the Basic Multilingual Plane). That is how paths that are
not UTF-8 and lone surrogates are already shown (`backslashreplace`), so one spelling
holds everywhere. A backslash itself is left as it is (except in markdown, where it is
markup): the escapes are for showing, not for reading back, and a name's own backslashes
stay readable.
"""

import re
from typing import TypeVar, overload

_Cell = TypeVar("_Cell")  # a non-text CSV field (a number, None) is given back as it is

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(found: "re.Match[str]") -> str:
    """The visible escape of the one character `found` matched."""
    char = found.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return "\\x{:02x}".format(code) if code < 0x100 else "\\u{:04x}".format(code)


# ---- terminals -------------------------------------------------------------------------

# C0 controls (ESC starts ANSI sequences; a newline or carriage return rewrites what the
# line seems to say), DEL, C1 controls (U+009B is a one-character CSI), the line and
# paragraph separators, the bidirectional embeddings, overrides and isolates that
# reorder what is shown (U+202A-U+202E, U+2066-U+2069: "Trojan Source"), and lone
# surrogates (no UTF-8 terminal can be sent one).
_NOT_FOR_TERMINALS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def terminal_text(text: str) -> str:
    """`text` safe to print on a terminal: every C0 and C1 control character (newline,
    carriage return and tab included: where a format puts a line break, it adds it after
    escaping), DEL, U+2028 and U+2029, the bidirectional overrides, embeddings and
    isolates (U+202A to U+202E, U+2066 to U+2069) and lone surrogates are written as
    visible escapes (`\\x1b`, `\\n`, `\\u202e`). Anything else, backslashes included, is
    kept; the result holds no character this escapes, so escaping it again changes
    nothing."""
    return _NOT_FOR_TERMINALS.sub(_visible, text)


_LINE_ENDS = re.compile("(\r?\n)")


def terminal_output(data: bytes) -> bytes:
    """A command's output (UTF-8) as a terminal is sent it: each line through
    `terminal_text`, its line end (`\\n` or `\\r\\n`) kept; a byte that is not UTF-8
    as `\\xNN`. What formats escape for themselves (markdown, JSON) is unchanged: that
    holds no character escaped here. A CSV cell's control characters (ESC sequences that
    clear the screen or set the window's title) become visible."""
    parts = _LINE_ENDS.split(data.decode("utf-8", "backslashreplace"))
    parts[::2] = [terminal_text(line) for line in parts[::2]]
    return "".join(parts).encode("utf-8")


# ---- CSV -------------------------------------------------------------------------------

# OWASP, "CSV Injection": a cell starting with one of these is a formula (or becomes one)
# in Excel, LibreOffice and Google Sheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text_cell(text: str) -> str:
    """A CSV text cell a spreadsheet shows as text: one beginning with `=`, `+`, `-`,
    `@`, a tab or a carriage return gets a leading `'`, which spreadsheets read as "text
    follows" (OWASP's rule against CSV injection); any other text is unchanged. For text
    cells only: a number written as a number (`-5`) is left as it is, so that it stays a
    number. Quoting is the csv module's (RFC 4180)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


@overload
def csv_cell(value: str) -> str: ...


@overload
def csv_cell(value: _Cell) -> _Cell: ...


def csv_cell(value: object) -> object:
    """A CSV field: text through `csv_text_cell`, anything else (a number, None) as it
    is, for the csv module to write (which takes any object)."""
    return csv_text_cell(value) if isinstance(value, str) else value


# ---- markdown --------------------------------------------------------------------------

# What changes the rendering of a GitHub-flavoured markdown table cell, and how it is
# written instead:
# - `|` ends the cell (even inside a code span): `\|`; `\` starts an escape: `\\`.
# - `<` starts raw HTML (`<img src=x onerror=...>`), `&` an entity, `>` closes a tag:
#   written as the entities `&lt;`, `&amp;`, `&gt;`. Entities rather than `\<`: every
#   markdown renderer passes an entity through to HTML as text, whereas a backslash
#   before `<` or `&` is not an escape in the original Markdown and some renderers, which
#   would show the backslash and then the live tag. GitHub renders `&lt;` as `<`.
# - a backquote starts a code span, `[` a link or an image (`![](http://tracker)`): `\``,
#   `\[`, `\]`.
# - `*` and `~` start emphasis and strikethrough even inside a word (`a*b*c` renders as
#   "abc" with b in italics: the stars vanish): `\*`, `\~`. `_` does only at a word's
#   edge (GFM's rule: `MatMul_1_x` renders as it is), so it is escaped only there
#   (`\_`), and names like `profile_logs_f8weight` stay as they are.
# Line breaks and other controls (compare's markdown goes to a terminal by default, and
# a newline would split the row) become visible escapes as on a terminal. `#`, `/`, `.`,
# `-`, `:`, `%` and the rest are plain text inside a cell and are kept. Left as they are
# on purpose: `$...$` (GitHub's inline math) and `:name:` (emoji shortcodes), which only
# restyle what is shown and are rare in names, and a bare URL, which GitHub links but
# shows as itself.
_MARKDOWN = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "[": "\\[",
    "]": "\\]",
    "*": "\\*",
    "~": "\\~",
    "<": "&lt;",
    ">": "&gt;",
    "&": "&amp;",
}
_MARKDOWN_SPECIAL = re.compile(r"[\\|`\[\]*~<>&]|_+")


def _markdown_escape(found: "re.Match[str]") -> str:
    text = found.group()
    if text[0] != "_":
        return _MARKDOWN[text]
    whole, start, end = found.string, found.start(), found.end()
    inside_a_word = (
        start > 0 and end < len(whole) and whole[start - 1].isalnum() and whole[end].isalnum()
    )
    return text if inside_a_word else text.replace("_", "\\_")


def markdown_cell(text: str) -> str:
    """`text` as the content of a GitHub-flavoured markdown table cell, rendered as the
    same text and never as markup: `\\`, `|`, backquote, `[`, `]`, `*`, `~` and `_` at a
    word's edge get a backslash; `<`, `>`, `&` become `&lt;`, `&gt;`, `&amp;`; then
    controls, separators, bidirectional overrides and lone surrogates become visible
    escapes as `terminal_text` writes them (so a name cannot split the row, nor reach a
    terminal as an escape sequence). Ordinary names (`fused QKV projection`, `Q/K
    scaling or conversion`, `MatMul_1`, `vit-f8weight`) are unchanged."""
    return terminal_text(_MARKDOWN_SPECIAL.sub(_markdown_escape, text))


_BACKQUOTES = re.compile("`+")


def markdown_code(text: str) -> str:
    """`text` as a code span in a GitHub-flavoured markdown table cell: fenced by one more
    backquote than its longest run of backquotes, with a space inside each fence when it
    begins or ends with a backquote (or begins and ends with a space, which the fences'
    spaces would otherwise eat); `|` written `\\|` (a pipe ends a table cell even inside
    a code span; GitHub shows `\\|` there as `|`); controls and the rest as
    `terminal_text` writes them. Nothing else is escaped: inside a code span `<`, `&`,
    `*`, `_` and `\\` are shown as they are (and a backslash cannot be escaped there, so
    `\\n` in a name and an escaped newline look alike)."""
    shown = terminal_text(text).replace("|", "\\|")
    longest = max((len(run) for run in _BACKQUOTES.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    edge_quote = shown.startswith("`") or shown.endswith("`")
    spaced = shown.startswith(" ") and shown.endswith(" ") and shown.strip(" ") != ""
    space = " " if edge_quote or spaced else ""
    return "{0}{1}{2}{1}{0}".format(fence, space, shown)


# ---- XML -------------------------------------------------------------------------------

# Characters XML 1.0 cannot hold at all, not even as character references: controls other
# than tab, line feed and carriage return, lone surrogates, U+FFFE and U+FFFF. One of them
# makes the whole document not XML (a browser then shows an error, or half the chart).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_XML_TEXT = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"}
_XML_ATTRIBUTE = dict(_XML_TEXT, **{'"': "&quot;", "'": "&apos;", "\n": "&#10;", "\t": "&#9;"})
_XML_TEXT_SPECIAL = re.compile("[&<>\r]")
_XML_ATTRIBUTE_SPECIAL = re.compile("[&<>\"'\n\r\t]")


def xml_text(text: str) -> str:
    """`text` as XML 1.0 character data: each character XML cannot hold (C0 controls
    other than tab, newline and carriage return; lone surrogates; U+FFFE; U+FFFF) written
    as a visible escape (`\\x01`, `\\ufffe`), then `&`, `<`, `>` as `&amp;`, `&lt;`,
    `&gt;`, and a carriage return as `&#13;` (which a parser keeps; written as it is, it
    would read back as a newline)."""
    return _XML_TEXT_SPECIAL.sub(
        lambda found: _XML_TEXT[found.group()], _NOT_XML.sub(_visible, text)
    )


def xml_attribute(text: str) -> str:
    """`text` as a quoted XML 1.0 attribute value, quotes included (`"..."`): characters
    XML cannot hold as `xml_text` writes them, then `&`, `<`, `>`, `"`, `'` as entities,
    and tab, newline and carriage return as character references, which a parser keeps
    (written as they are, it would turn them into spaces)."""
    return '"{}"'.format(
        _XML_ATTRIBUTE_SPECIAL.sub(
            lambda found: _XML_ATTRIBUTE[found.group()], _NOT_XML.sub(_visible, text)
        )
    )


# ---- HTML ------------------------------------------------------------------------------

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"}
_HTML_SPECIAL = re.compile("[&<>\"']")


def html_text(text: str) -> str:
    """`text` as HTML text or a double-quoted attribute value: `&`, `<`, `>`, `"`, `'` as
    `&amp;`, `&lt;`, `&gt;`, `&#34;`, `&#39;`, byte for byte as Jinja2's autoescaping
    writes every other value of the report page; nothing else is touched (a lone
    surrogate is shown when the page is encoded, `backslashreplace`)."""
    return _HTML_SPECIAL.sub(lambda found: _HTML[found.group()], text)
