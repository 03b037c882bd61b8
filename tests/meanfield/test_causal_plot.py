"""A causal particle run's figure (meanfield/plotting/runs.py): its title names the mask, and its mode panel draws no
whole-sequence linear theory ``e^{lambda_k t}`` (MATH.md §2.3 does not hold under a causal mask, §8), while the same
run without the mask does."""

import matplotlib

matplotlib.use("Agg")

import meanfield


def _mode_panel(figure):
    return next(ax for ax in figure.axes if ax.get_title().startswith("(c)"))


def _dashed(ax) -> int:
    return sum(line.get_linestyle() == "--" for line in ax.get_lines())


def test_the_causal_run_shows_no_whole_sequence_theory():
    settings = dict(n=128, beta=9.0, t_final=1.0, seed=3)
    causal = meanfield.plot_run(meanfield.simulate_particles(mask="causal", **settings))
    plain = meanfield.plot_run(meanfield.simulate_particles(**settings))
    assert "causal mask" in causal._suptitle.get_text()
    assert "causal mask" not in plain._suptitle.get_text()
    assert _dashed(_mode_panel(causal)) == 0
    assert _dashed(_mode_panel(plain)) == len(_mode_panel(plain).get_lines()) // 2
    assert not any("^*" in text.get_text() for text in _mode_panel(causal).get_legend().get_texts())
    assert any("^*" in text.get_text() for text in _mode_panel(plain).get_legend().get_texts())
