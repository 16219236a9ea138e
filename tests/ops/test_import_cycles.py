"""No import cycle among the modules of ``service`` and ``consumers``.

import-linter (``lint-imports`` in ``.ci/run``, contracts in ``pyproject.toml``) checks the
layering between named packages but cannot say "no cycle anywhere". This test builds the module
import graph with grimp (import-linter's graph library) — every import statement, including
those inside functions and under ``TYPE_CHECKING`` — and asserts that no strongly connected
component has more than one module.
"""

from __future__ import annotations

import grimp

ROOTS = ("service", "consumers")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Return the strongly connected components of more than one module (each sorted, the
    list sorted), by Tarjan's algorithm (Tarjan, "Depth-first search and linear graph
    algorithms", SIAM J. Comput. 1(2), 1972), iterative so deep graphs do not hit the
    recursion limit. Empty when the graph has no cycle; a self-import is not reported."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = []
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph.find_modules_directly_imported_by(root))))
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def _graph(edges: list[tuple[str, str]]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in edges:
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_the_cycle_finder_finds_the_cycles_it_is_given() -> None:
    """Worked out by hand: a -> b -> c -> a is one cycle, d <-> e another; f only imports
    into the first and g imports itself (not a cycle between modules)."""
    graph = _graph([("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.e"),
                    ("p.e", "p.d"), ("p.f", "p.a"), ("p.g", "p.g")])  # fmt: skip
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"], ["p.d", "p.e"]]
    assert import_cycles(_graph([("p.a", "p.b"), ("p.b", "p.c"), ("p.a", "p.c")])) == []


def test_service_and_consumers_have_no_import_cycle() -> None:
    graph = grimp.build_graph(*ROOTS, cache_dir=None)
    assert len(graph.modules) > 100  # the whole tree was read
    cycles = import_cycles(graph)
    assert cycles == [], "import cycles (break each: move the shared part below both): " + (
        "; ".join(" <-> ".join(cycle) for cycle in cycles)
    )
