"""The code's shape: C++ layers include only layers below them (docs/ARCHITECTURE.md's table,
bottom up) and torch_pjrt's modules do not import each other in a cycle at import time."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAYERS = ["runtime", "hlo", "graph", "lowering", "collectives", "device", "aten", "distributed"]
LAYERS.append("python")


def test_cpp_layers_include_only_lower_layers():
    wrong = []
    for path in sorted((ROOT / "csrc").rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        layer = path.relative_to(ROOT / "csrc").parts[0]
        for used in re.findall(r'^#include "(\w+)/', path.read_text(), re.M):
            if LAYERS.index(used) > LAYERS.index(layer):
                wrong.append(f"{path.relative_to(ROOT)} includes {used}/")
    assert not wrong, "\n".join(wrong)


def test_architecture_table_lists_the_layers_in_order():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    rows = re.findall(r"^\| (\w+) \| `csrc/(\w+)/`", text, re.M)
    assert [path for _, path in rows] == LAYERS


def _module_imports(path, package):
    """torch_pjrt modules `path` imports when it is imported (top-level statements only)."""
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if name.endswith(".__init__"):
        name = name[: -len(".__init__")]
    base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(package)}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base.split(".")
                parent = ".".join(parent[: len(parent) - node.level + 1])
                target = f"{parent}.{node.module}" if node.module else parent
            else:
                target = node.module or ""
            if not target.startswith(package):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.add(sub if (ROOT / (sub.replace(".", "/") + ".py")).exists() else target)
    return name, found


def test_python_modules_import_no_cycle():
    graph = dict(_module_imports(p, "torch_pjrt") for p in (ROOT / "torch_pjrt").rglob("*.py"))
    cycles = []
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            # A package importing its submodules, and a module taking names from a package above
            # it (the extension _C among them), is how packages are built, not a cycle.
            if nxt == node or nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(cycles)
