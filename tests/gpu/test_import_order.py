"""Inside the GPU stage imports point one way: no module of minigrad.gpu imports itself back, however indirectly.

grimp (import-linter's graph) sees every import, those inside functions
included.
"""

import grimp


def test_no_import_cycle_through_the_gpu_stage():
    graph = grimp.build_graph("minigrad", cache_dir=None)
    gpu = {module for module in graph.modules if module == "minigrad.gpu" or module.startswith("minigrad.gpu.")}
    cycles = []
    for importer in sorted(gpu):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert not cycles, "import cycles (move the shared names into a module both can import):\n" + "\n".join(cycles)
