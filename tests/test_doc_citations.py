"""What the text cites exists (issue 21 point 6, "truthful text"): every Markdown file in docs/
and README.md, and the docstrings and comments of the product's .py files (with any other
string of theirs that cites a doc section, such as an API schema's description), are read for
six kinds of citation, and each must resolve:

- a path of the repository (`board/grading.py`, `tests/test_x.py`, `deploy/Caddyfile`,
  `docs/`): a path whose first part is one of the repository's top-level folders must exist (a
  path that goes on into a placeholder, `board/suite_data/<suite_id>.json`, is not a
  citation, nor is one under a folder only a running board makes, `var/`), and so must the
  target of a relative Markdown link; a file named alone in backticks (`signing.py`) must be
  the name of some file of the repository;
- a dotted name of the product's own code (`board.recording.commit_run`,
  `config.health.register_readiness_check`) whose first part is a product package: the longest
  importable module prefix is imported (Django is set up by pytest-django) and the rest is
  looked up on it attribute by attribute;
- a section, `docs/protocol.md §Ingest cost` or `(§Quotas per key)`: the file is the `.md`
  named just before the `§` (looked up beside the citing file, then at the repository's root,
  then in docs/), or the one of the `§` it follows in a list (`§Rooflines, §Drafter health`);
  with no file named, it is the citing Markdown file itself, or for a .py file the last `.md`
  its comment or docstring named before. The `§` names a heading of that file when,
  case-insensitively, whitespace collapsed and backticks dropped, the heading is the start of
  the text after the `§` (ending at a word boundary: `§Server-side grading: a run with…`), or
  when that text up to its first punctuation is the start of the heading (`§Evidence and the
  ingest log`, `§Quotas` for "Quotas per key"). The same holds for the other form a section is
  cited in, `docs/recipes.md, "Scrubbing"`;
- a name beside its file, "`commit_final` in `submissions/ingest/final.py`" or
  "board/recording.py `resume_candidates`": the file defines it (a `def`, a `class`, an
  assignment or a dict's key; for `Class.method`, the class);
- a test: `tests/test_x.py::test_y` or "`test_y` in tests/test_x.py" names a `def` or `class`
  of that file;
- a setting, `AEON_…`: the code reads it (it is a name or a string of the product's or the
  tests' code, not only of their docstrings or comments, or it is in deploy/, the Makefile or
  the CI script).
"""

import ast
import importlib
import io
import re
import tokenize
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("anchor", "benchtools", "board", "config", "demo", "evidence", "recipes", "submissions")
# What a running board or a checkout makes (all in .gitignore) is not the repository's.
RUNTIME_FOLDERS = {".git", ".venv", "node_modules", "staticfiles", "var"}
TOP_FOLDERS = tuple(
    sorted(p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in RUNTIME_FOLDERS)
)
FILE_SUFFIXES = {"py", "md", "json", "html", "js", "css", "yaml", "yml", "sh", "toml", "txt"}
FILE_SUFFIXES |= {"pem", "cfg", "conf", "sqlite3", "ini"}

PATH = re.compile(
    r"(?<![\w./~-])((?:" + "|".join(re.escape(f) for f in TOP_FOLDERS) + r")/[\w./-]*)"
)
BARE_FILE = re.compile(r"`([\w-]+\.(?:py|md|html|js|css))`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOTTED = re.compile(r"(?<![\w./-])((?:" + "|".join(PRODUCT) + r")(?:\.\w+)+)(?![\w/-])")
SECTION = re.compile(r"§")
MD_BEFORE = re.compile(r"`?([\w./-]+\.md)`?\s*$")
CHAIN = re.compile(r"^[\s,`]*(?:and|or)?[\s`]*$")
TEST_ID = re.compile(r"(tests/test_\w+\.py)::(\w+)")
TEST_IN = re.compile(r"`(test_\w+)`\s+in\s+`?(tests/test_\w+\.py)")
PY_PATH = r"((?:" + "|".join(PRODUCT + ("tests",)) + r")/[\w/]+\.py)"
PATH_THEN_NAME = re.compile(r"`?" + PY_PATH + r"`?(?:'s|,)? `([A-Za-z_][\w.]*)(?:\(\))?`")
NAME_IN_PATH = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?` (?:in|of|from) `?" + PY_PATH)
QUOTED_SECTION = re.compile(r'`?([\w./-]+\.md)`?, "([^"\n]+)"')
SETTING = re.compile(r"\bAEON_[A-Z0-9_]+")
PLACEHOLDER = ("<", "{", "*", "…", "$")


@dataclass
class Text:
    """A stretch of prose: a Markdown file, or one docstring/comment block of a .py file."""

    path: Path
    line: int
    body: str

    def where(self, offset: int) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line + self.body.count(chr(10), 0, offset)}"


def markdown_files() -> list[Path]:
    return sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def python_files() -> list[Path]:
    files = []
    for package in PRODUCT:
        files += [p for p in sorted((ROOT / package).rglob("*.py")) if "migrations" not in p.parts]
    return files


def python_texts(path: Path) -> list[Text]:
    """The docstrings and comment blocks of a .py file, and any string citing a doc section."""
    source = path.read_text()
    texts = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "§" in node.value:
                texts.append(Text(path, node.lineno, node.value))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = node.body[0] if node.body else None
            if (
                isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
                and "§" not in doc.value.value
            ):
                texts.append(Text(path, doc.lineno, doc.value.value))
    block: list[str] = []
    start = last = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        row = token.start[0]
        if block and row != last + 1:
            texts.append(Text(path, start, "\n".join(block)))
            block = []
        if not block:
            start = row
        block.append(token.string.lstrip("#").strip())
        last = row
    if block:
        texts.append(Text(path, start, "\n".join(block)))
    return texts


def all_texts() -> list[Text]:
    texts = [Text(p, 1, p.read_text()) for p in markdown_files()]
    for path in python_files():
        texts += python_texts(path)
    return texts


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).strip().lower()


def headings(path: Path) -> list[str]:
    found, fenced = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#+\s+(.*)", line)):
            found.append(squash(m.group(1)))
    return found


def names_heading(after: str, heads: list[str]) -> bool:
    after = squash(after)
    for head in heads:
        if after.startswith(head) and (len(after) == len(head) or not after[len(head)].isalnum()):
            return True
    phrase = re.split(r"[.;,():|—]| - ", after, maxsplit=1)[0].strip()
    return bool(phrase) and any(
        head.startswith(phrase) and (len(head) == len(phrase) or not head[len(phrase)].isalnum())
        for head in heads
    )


def md_file(name: str, citing: Path) -> Path | None:
    for base in (citing.parent, ROOT, ROOT / "docs"):
        if (base / name).is_file():
            return base / name
    return None


@cache
def repository_file_names() -> frozenset[str]:
    return frozenset(
        p.name
        for folder in TOP_FOLDERS
        for p in (ROOT / folder).rglob("*")
        if not RUNTIME_FOLDERS.intersection(p.parts)
    ) | frozenset(p.name for p in ROOT.iterdir())


def broken_paths(text: Text) -> list[str]:
    broken = []
    for m in PATH.finditer(text.body):
        cited = m.group(1).rstrip(".,:;-")
        after = text.body[m.end() : m.end() + 1]
        if after and after in PLACEHOLDER or cited.endswith((".", "/.")):
            continue
        if not (ROOT / cited).exists():
            broken.append(f"{text.where(m.start())}: no such path {cited}")
    for m in BARE_FILE.finditer(text.body):
        if m.group(1) not in repository_file_names():
            broken.append(f"{text.where(m.start())}: no file named {m.group(1)} anywhere")
    if text.path.suffix == ".md":
        for m in LINK.finditer(text.body):
            target = m.group(1)
            if "://" in target or target.startswith(("/", "mailto:")):
                continue
            if not (text.path.parent / target).exists():
                broken.append(f"{text.where(m.start())}: link to missing {target}")
    return broken


def defined_in_source(module: str, name: str) -> bool:
    """For a module that cannot be imported here (benchtools.settings needs the bench's
    environment): `name` is a `def`, `class` or top-level assignment of its source."""
    base = ROOT / module.replace(".", "/")
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    return path.is_file() and bool(
        re.search(
            rf"^(?:(?:async\s+)?def\s+|class\s+){name}\b|^{name}\s*[:=]", path.read_text(), re.M
        )
    )


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[-1] in FILE_SUFFIXES:
        return True  # a file name (`config.json`), not a Python name
    if len(parts) == 2 and parts[1][:1].isupper():  # Django's "app_label.Model"
        try:
            apps.get_model(dotted)
            return True
        except LookupError:
            pass
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        except ImproperlyConfigured:
            return len(parts) == cut or (
                len(parts) == cut + 1 and defined_in_source(module, parts[cut])
            )
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def broken_names(text: Text) -> list[str]:
    return [
        f"{text.where(m.start())}: {m.group(1)} does not resolve"
        for m in DOTTED.finditer(text.body)
        if not resolves(m.group(1))
    ]


def broken_sections(text: Text) -> list[str]:
    broken = []
    previous_file, previous_end = None, None
    last_named = text.path if text.path.suffix == ".md" else None
    for m in SECTION.finditer(text.body):
        before = text.body[: m.start()]
        named = MD_BEFORE.search(before)
        if named:
            target = md_file(named.group(1), text.path)
            if target is None:
                broken.append(f"{text.where(m.start())}: no such file {named.group(1)}")
                continue
        elif previous_end is not None and CHAIN.match(text.body[previous_end : m.start()]):
            target = previous_file
        else:
            mentioned = re.findall(r"([\w./-]+\.md)", before)
            if text.path.suffix == ".md":
                target = text.path
            elif mentioned:
                target = md_file(mentioned[-1], text.path)
            else:
                target = last_named
        after = text.body[m.end() : m.end() + 160]
        if after.startswith("<"):  # the `docs/<file>.md §<heading>` pattern itself
            continue
        if target is None:
            broken.append(f"{text.where(m.start())}: §{after[:40]!r} names no file")
            continue
        if not names_heading(after, headings(target)):
            rel = target.relative_to(ROOT)
            broken.append(f"{text.where(m.start())}: {rel} has no heading §{after[:50]!r}")
        end = re.search(r"[,)]|$", after)
        previous_file, previous_end = target, m.end() + (end.start() if end else 0)
    return broken


def broken_quoted_sections(text: Text) -> list[str]:
    """The other form a section is cited in: `docs/recipes.md, "Scrubbing"`."""
    broken = []
    for m in QUOTED_SECTION.finditer(text.body):
        target = md_file(m.group(1), text.path)
        if target is None:
            broken.append(f"{text.where(m.start())}: no such file {m.group(1)}")
        elif not names_heading(m.group(2), headings(target)):
            rel = target.relative_to(ROOT)
            broken.append(f"{text.where(m.start())}: {rel} has no heading {m.group(2)!r}")
    return broken


@cache
def settings_read() -> frozenset[str]:
    """Every AEON_ name the code reads: identifiers and string literals of the product's and the
    tests' .py files but this one (docstrings and comments left out), and the deploy files, Makefile and CI
    script, where a shell or Caddy reads the environment."""
    found = set()
    tests = [p for p in sorted((ROOT / "tests").rglob("*.py")) if p != Path(__file__).resolve()]
    for path in python_files() + tests:
        tree = ast.parse(path.read_text(), filename=str(path))
        docs = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docs:
                    found.update(SETTING.findall(node.value))
    for path in [*(ROOT / "deploy").iterdir(), ROOT / "Makefile", ROOT / ".ci" / "run"]:
        if path.is_file():
            code = "\n".join(
                line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
            )
            found.update(SETTING.findall(code))
    return frozenset(name for name in found if name.startswith("AEON_"))


def broken_settings(text: Text) -> list[str]:
    return [
        f"{text.where(m.start())}: nothing reads {m.group(0)}"
        for m in SETTING.finditer(text.body)
        if not m.group(0).endswith("_") and m.group(0) not in settings_read()
    ]


def defines(path: Path, name: str) -> bool:
    return bool(re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b", path.read_text(), re.M))


def names_defined(path: Path, dotted: str) -> bool:
    """`dotted`'s first part is a `def`, `class` or assignment in `path` (at any depth), or a
    key of a dict written there (`SWAGGER_UI_SETTINGS` in config/settings.py)."""
    name = dotted.split(".")[0]
    return bool(
        re.search(
            rf"^\s*(?:(?:async\s+)?def\s+|class\s+){name}\b|^\s*{name}\s*(?::[^=\n]*)?=(?!=)"
            rf"|^\s*[\"']{name}[\"']\s*:",
            path.read_text(),
            re.M,
        )
    )


def broken_names_in_files(text: Text) -> list[str]:
    broken = []
    cited = [(m, m.group(1), m.group(2)) for m in PATH_THEN_NAME.finditer(text.body)]
    cited += [(m, m.group(2), m.group(1)) for m in NAME_IN_PATH.finditer(text.body)]
    for m, file, name in cited:
        if name.split(".")[-1] in FILE_SUFFIXES:
            continue  # a list of files, `a.py`, `b.py`
        path = ROOT / file
        if path.is_file() and not names_defined(path, name):
            broken.append(f"{text.where(m.start())}: {file} defines no {name}")
    return broken


def broken_tests(text: Text) -> list[str]:
    broken = []
    cited = [(m, m.group(1), m.group(2)) for m in TEST_ID.finditer(text.body)]
    cited += [(m, m.group(2), m.group(1)) for m in TEST_IN.finditer(text.body)]
    for m, file, name in cited:
        path = ROOT / file
        if not path.is_file() or not defines(path, name):
            broken.append(f"{text.where(m.start())}: no test {name} in {file}")
    return broken


def all_broken(texts: list[Text]) -> list[str]:
    checks = (
        broken_paths,
        broken_names,
        broken_names_in_files,
        broken_sections,
        broken_quoted_sections,
        broken_tests,
        broken_settings,
    )
    return [b for check in checks for t in texts for b in check(t)]


@pytest.fixture(scope="module")
def texts() -> list[Text]:
    return all_texts()


def test_the_text_is_read(texts):
    """Guards the reading itself: docs, docstrings and comments are all found, each kind of
    citation is met, and a citation known to be broken is reported."""
    assert {t.path.name for t in texts} >= {"README.md", "protocol.md", "grading.py"}
    body = "\n".join(t.body for t in texts)
    for pattern in (PATH, DOTTED, SECTION):
        assert pattern.search(body)
    fake = Text(
        ROOT / "docs" / "README.md",
        1,
        "see `board/nowhere.py`, `nowhere.py`, `board.recording.no_such_thing`, docs/protocol.md §No such "
        "heading, tests/test_grading.py::test_no_such_test, `no_such_name` in "
        'board/grading.py and (docs/recipes.md, "No such heading"), AEON_NO_SUCH_SETTING',
    )
    found = all_broken([fake])
    assert len(found) == 8, found


def test_cited_paths_exist(texts):
    assert [b for t in texts for b in broken_paths(t)] == []


def test_cited_names_resolve(texts):
    assert [b for t in texts for b in broken_names(t)] == []


def test_names_cited_beside_their_file_exist(texts):
    assert [b for t in texts for b in broken_names_in_files(t)] == []


def test_cited_settings_are_read(texts):
    assert [b for t in texts for b in broken_settings(t)] == []


def test_cited_sections_exist(texts):
    assert [b for t in texts for b in broken_sections(t)] == []
    assert [b for t in texts for b in broken_quoted_sections(t)] == []


def test_cited_tests_exist(texts):
    assert [b for t in texts for b in broken_tests(t)] == []
