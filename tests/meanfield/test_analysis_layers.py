"""The layer rule ``meanfield <- solvers <- validation`` (issue 25 item 5; DESIGN.md "Layout") for the analysis and
the cluster definition: they use the model-level primitives of ``meanfield`` (harmonics, gegenbauer, point_groups,
memo), never the solvers, not even inside a function; and the solvers use those very functions (one definition)."""

import ast
import pathlib

import pytest

from meanfield import analysis, cluster_detection, gegenbauer, harmonics, memo, point_groups

MODULES = (analysis, cluster_detection, harmonics, gegenbauer, point_groups, memo)
ROOT = pathlib.Path(analysis.__file__).parent


def _imports(module):
    """``(module imported, names)`` of every import statement of ``module``'s source, at any depth."""
    for node in ast.walk(ast.parse(pathlib.Path(module.__file__).read_text())):
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or ""), tuple(alias.name for alias in node.names)


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_no_import_of_an_upper_layer_or_of_the_package_itself(module):
    for name, names in _imports(module):
        assert not name.startswith(("meanfield.solvers", "meanfield.validation", "solvers", "validation", "..")), name
        assert name != "meanfield" or names == (), name              # ``import meanfield`` loads the __init__ ...
        if name in ("meanfield", "."):                              # ... as ``from meanfield import X`` does, unless
            assert all((ROOT / f"{item}.py").exists() for item in names), names   # X is a sibling module


def test_the_solvers_use_the_model_level_functions_themselves():
    from meanfield.solvers import clusters, finite_volume, interaction, lagrangian, sphere, zonal
    from meanfield.solvers import memo as solver_memo

    assert sphere.m_major_layout is interaction.m_major_layout is harmonics.m_major_layout
    assert sphere.point_mass_coefficients is lagrangian.point_mass_coefficients is harmonics.point_mass_coefficients
    assert interaction.sphere_locations is lagrangian.sphere_locations is harmonics.sphere_locations
    assert lagrangian.SHT_EPSILON == interaction.SHT_MIN_EPSILON == harmonics.SHT_EPSILON == 3e-13
    assert zonal.normalised_gegenbauer is finite_volume.normalised_gegenbauer is gegenbauer.normalised_gegenbauer
    for name in ("link_groups", "merge_points", "close_pairs", "apart_by_sorting", "pairs_within", "TIGHT_RADIUS"):
        assert getattr(clusters, name) is getattr(point_groups, name), name
    assert solver_memo.ArrayMemo is interaction.ArrayMemo is memo.ArrayMemo
