"""``meanfield validate cluster-events``: what it measures and that each claim can fail (issue 32).

The study itself runs in ``meanfield validate report`` (quick: about 30 s); here its measurements are checked on
small hand-made run records, each built to show one bug: a count that rises after the merges, a fall with no merge
recorded, a count that disagrees with the events, and schemes that disagree where no merge explains it.
"""

import numpy as np
import xarray as xr

from meanfield.validation.studies.cluster_events import analyse, cluster_events_claims, disagreements


def _run(times, counts, events=(), formation=np.nan):
    """A run record: frames' counts and events ``(time, kind)``; merges are the events of kind merge."""
    events = list(events)
    merges = [t for t, kind in events if kind == "merge"]
    return xr.Dataset({"cluster_count": ("time", np.asarray(counts)),
                       "event_time": ("event", np.array([t for t, _ in events], dtype=float)),
                       "event_kind": ("event", np.array([kind for _, kind in events], dtype=str)),
                       "merge_time": ("merge", np.array(merges, dtype=float))},
                      coords={"time": np.asarray(times, dtype=float)},
                      attrs={"formation_time": formation, "stop_reason": "completed"})


GOOD = _run([0, 10, 20, 30, 40], [0, 2, 2, 1, 1], [(5, "formation"), (6, "formation"), (25, "merge")], 5.0)


def test_a_good_run_passes_its_own_checks():
    row = analyse(GOOD)
    assert (row["rises_after_formation"], row["falls_without_merge"], row["count_off_events"]) == (0, 0, 0)
    assert row["merges"] == 1 and row["final_count"] == 1


def test_each_broken_run_is_caught():
    rising = _run([0, 10, 20, 30, 40], [0, 2, 1, 2, 2], [(5, "formation"), (6, "formation"), (15, "merge"),
                                                           (25, "formation")], 5.0)
    assert analyse(rising)["rises_after_formation"] == 1
    silent_fall = _run([0, 10, 20, 30, 40], [0, 2, 2, 1, 1], [(5, "formation"), (6, "formation"), (35, "merge")], 5.0)
    row = analyse(silent_fall)                  # the count falls at t = 30, its merge is recorded at 35
    assert row["falls_without_merge"] == 1 and row["count_off_events"] == 1


def test_disagreements_are_explained_only_by_an_event_in_the_frame_interval():
    early = _run([0, 10, 20, 30], [2, 2, 1, 1], [(15, "merge")])
    late = _run([0, 10, 20, 30], [2, 2, 2, 1], [(25, "merge")])
    assert disagreements([early, late]) == 0 and disagreements([early, late], explained=False) == 1
    wrong = _run([0, 10, 20, 30], [2, 1, 1, 1], [(25, "merge")])     # falls at 10 with no merge before 25
    assert disagreements([early, wrong]) == 1


def test_claims_fail_on_a_broken_table():
    rows = [analyse(GOOD)] * 2
    table = xr.Dataset({key: (("run", "event") if key == "merge_time" else "run", [row[key] for row in rows])
                        for key in rows[0]},
                       attrs={"bumps_disagreements": 0, "bumps_merge_spread": 1e-4, "staircase_disagreements": 0,
                              "staircase_disagreements_strict": 0, "quick": 0})
    assert all(check.passed for check in cluster_events_claims(table))
    for name, value in (("bumps_disagreements", 1), ("bumps_merge_spread", 0.05),
                        ("staircase_disagreements_strict", 1)):
        broken = table.copy()
        broken.attrs[name] = value
        assert not all(check.passed for check in cluster_events_claims(broken)), name
    quick = table.copy()
    quick.attrs.update(quick=1, staircase_disagreements_strict=2)     # the quick study: straddled frames allowed
    assert all(check.passed for check in cluster_events_claims(quick))
    quick.attrs["staircase_disagreements"] = 1
    assert not all(check.passed for check in cluster_events_claims(quick))
    broken = table.copy()
    broken["falls_without_merge"] = ("run", [0, 1])
    assert not all(check.passed for check in cluster_events_claims(broken))
