"""The module graph (issue 21, "no import cycles; `config/` imports no app"): every import of the
product's packages, read from the source (top-level and deferred imports alike: an import put
inside a function to dodge a cycle is still the cycle), must form no cycle beyond the known
ones listed below, and `config/` imports no app beyond the listed ones. The lists only shrink:
a cycle or import that is gone must leave its list too."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("anchor", "benchtools", "board", "demo", "evidence", "recipes", "submissions")
PACKAGES = ("config", *APPS)

# Today's cycles between modules, each a strongly connected component: none is left (issue 21
# point 2 broke them); a new one fails the check.
KNOWN_MODULE_CYCLES: list[set[str]] = []
# Today's cycles between the apps (as packages): none is left (issue 21 point 2: from the bottom,
# evidence <- board <- submissions <- anchor, docs/README.md §Layout); a new one fails the check.
KNOWN_APP_CYCLES: list[set[str]] = []
# Today's imports of an app by config/ (module, imported module): none (apps register what
# config/ runs for them, e.g. config.health.register_readiness_check).
KNOWN_CONFIG_IMPORTS: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The product's modules `name` imports (a `from x import y` of a module y names x.y)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    found = set()
    for module in names:
        while module and module not in known:
            module = module.rpartition(".")[0]
        if module and module != name:
            found.add(module)
    return found


def module_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def app_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    apps: dict[str, set[str]] = {app: set() for app in APPS}
    for module, targets in graph.items():
        source = module.split(".")[0]
        if source in apps:
            apps[source] |= {t.split(".")[0] for t in targets if t.split(".")[0] in APPS}
            apps[source].discard(source)
    return apps


def test_the_cycle_finder_finds_what_it_should():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles({"x": {"y"}, "y": set()}) == []


def test_the_graph_reads_both_import_forms_and_deferred_imports():
    graph = module_graph()
    assert "board.models" in graph["board.answer_cache"]  # from board.models import …
    assert "board.answer_cache" in graph["board.charts"]
    assert "config.api_errors" in graph["config.middleware"]


def new_cycles(found: list[set[str]], known: list[set[str]]) -> list[set[str]]:
    return [cycle for cycle in found if not any(cycle <= allowed for allowed in known)]


def test_no_new_import_cycle_between_modules():
    assert new_cycles(cycles(module_graph()), KNOWN_MODULE_CYCLES) == []


def test_no_new_import_cycle_between_apps():
    assert new_cycles(cycles(app_graph(module_graph())), KNOWN_APP_CYCLES) == []


# The layers of docs/README.md §Layout, from the bottom: an app imports only apps of lower layers.
LAYERS = (
    {"evidence", "recipes"},
    {"board"},
    {"submissions"},
    {"anchor"},
    {"demo"},
    {"benchtools"},
)


def test_each_app_imports_only_the_layers_below_it():
    assert set().union(*LAYERS) == set(APPS)
    apps = app_graph(module_graph())
    below: set[str] = set()
    upward = {}
    for layer in LAYERS:
        for app in layer:
            beyond = apps[app] - below
            if beyond:
                upward[app] = beyond
        below |= layer
    assert upward == {}


def test_config_imports_no_app_beyond_the_known_imports():
    graph = module_graph()
    found = {
        (module, target)
        for module, targets in graph.items()
        if module.split(".")[0] == "config"
        for target in targets
        if target.split(".")[0] in APPS
    }
    assert found <= KNOWN_CONFIG_IMPORTS, found - KNOWN_CONFIG_IMPORTS


def test_the_known_lists_only_shrink():
    """A cycle broken or an import removed leaves its list: the allowlists never hold more than
    the code does."""
    graph = module_graph()
    modules_now = cycles(graph)
    stale = [known for known in KNOWN_MODULE_CYCLES if not any(known & c for c in modules_now)]
    assert stale == [], "these cycles are gone: remove them from KNOWN_MODULE_CYCLES"
    apps_now = cycles(app_graph(graph))
    stale = [known for known in KNOWN_APP_CYCLES if not any(known & c for c in apps_now)]
    assert stale == [], "these cycles are gone: remove them from KNOWN_APP_CYCLES"
    gone = {pair for pair in KNOWN_CONFIG_IMPORTS if pair[1] not in graph.get(pair[0], set())}
    assert gone == set(), "these imports are gone: remove them from KNOWN_CONFIG_IMPORTS"


def test_migrations_import_no_services():
    """Migrations run against historical models (`apps.get_model`): they import no service,
    selector or task of today's code (issue 21 point 2), at most a pure module."""
    known = modules()
    found = {}
    for package in APPS:
        for path in (ROOT / package).glob("migrations/*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            rooms = {
                target
                for target in imported(name, path, known)
                if target.split(".")[-1] in ("services", "selectors", "tasks", "views")
                or ".selectors." in target
            }
            if rooms:
                found[name] = rooms
    assert found == {}
