"""Issue 32: no import circles among product modules, module level or inside functions
(imports under `if TYPE_CHECKING:` are annotations only and do not count), no product
module over 500 lines, no package directory with more than 20 modules at one level. The
graph is built from the AST of every module, independently of Python's import machinery."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotate", "evaluation", "models_runtime", "humeval")
# No exceptions: models_runtime/jobs.py was split (job_support/), evaluation/ and
# models_runtime/ hold their newer concerns in rooms of their own.
LONG_MODULES: dict[str, int] = {}
CROWDED_FOLDERS: dict[str, int] = {}


def product_files():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def imported(node, name: str, is_package: bool, modules: set[str]) -> list[str]:
    """The product modules one import statement loads (`from pkg import sub` loads pkg.sub)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = name.split(".") if is_package else name.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    found = []
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.append(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in product_files()}
    modules = {name for name, _ in files}
    graph = {}
    for (name, is_package), path in files.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        graph[name] = {m for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                       for m in imported(node, name, is_package, modules)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_checker_finds_a_known_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_in_product_code():
    graph = import_graph()
    assert len(graph) > 200  # every product module was read
    assert cycles(graph) == []


def test_no_product_module_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in product_files() if (n := len(p.read_text().splitlines())) > 500}
    assert set(long) <= set(LONG_MODULES)
    assert all(n <= LONG_MODULES[path] for path, n in long.items())
    assert not any(p.startswith("annotate/") for p in long)


def test_no_package_level_holds_more_than_20_modules():
    crowded = {}
    for package in PACKAGES:
        for folder in [ROOT / package, *(ROOT / package).rglob("*")]:
            if folder.is_dir() and folder.name not in ("migrations", "__pycache__"):
                n = len(list(folder.glob("*.py")))
                if n > 20:
                    crowded[str(folder.relative_to(ROOT))] = n
    assert set(crowded) <= set(CROWDED_FOLDERS)
    assert all(n <= CROWDED_FOLDERS[folder] for folder, n in crowded.items())
