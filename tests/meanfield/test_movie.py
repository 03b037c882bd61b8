"""Movies of runs: every geometry as .gif, .mp4 through imageio-ffmpeg, one-line refusals."""

import numpy as np
import pytest
import xarray as xr
from PIL import Image

from meanfield import InputError
from meanfield.gaussian import solve as solve_moments
from meanfield.plotting.movie import MAX_FRAMES, write_movie
from meanfield.plotting.run_data import frame_indices
from meanfield.plotting.runs import plot_run
from meanfield.solvers.runs.solve import solve
from meanfield.solvers.runs.particle_run import simulate

RUNS = {
    "circle": lambda: solve("circle", beta=4.0, resolution=32, init="perturbed:1e-3", t_final=1.0, save_every=0.1),
    "zonal": lambda: solve("zonal", dim=4, beta=4.0, resolution=8, init="perturbed:1e-3", t_final=1.0,
                           save_every=0.1),
    "sphere": lambda: solve("sphere", beta=4.0, resolution=8, init="perturbed:1e-3", t_final=1.0, save_every=0.1),
    "sphere-lagrangian": lambda: solve("sphere", scheme="lagrangian", beta=9.0, resolution=6, init="perturbed:1e-3",
                                       t_final=2.0, save_every=0.2),
    "particles-d2": lambda: simulate(dim=2, n=32, beta=4.0, init="uniform", seed=0, t_final=1.0, save_every=0.1),
    "particles-d3": lambda: simulate(dim=3, n=32, beta=4.0, init="uniform", seed=0, t_final=1.0, save_every=0.1),
    "particles-d5": lambda: simulate(dim=5, n=32, beta=4.0, init="uniform", seed=0, t_final=1.0, save_every=0.1),
    "gaussian": lambda: solve_moments(np.zeros(2), np.diag([1.0, 0.5]), V=np.eye(2), Q=np.eye(2), K=np.eye(2),
                                      t_final=0.3, save_every=0.03),
    "gaussian-d1": lambda: solve_moments(np.zeros(1), np.eye(1), V=np.eye(1), Q=np.eye(1), K=np.eye(1),
                                         t_final=0.4, save_every=0.04),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_gif_of_every_geometry_has_the_frames_asked_for(name, tmp_path):
    run = RUNS[name]()
    assert run.sizes["time"] >= 10
    path = write_movie(run, tmp_path / "movie.gif", fps=5, frames=6)
    assert path == tmp_path / "movie.gif" and path.stat().st_size > 5_000
    with Image.open(path) as movie:
        assert movie.n_frames == 6 and movie.size == (1000, 420)
        assert movie.info["duration"] == 200                      # 5 frames per second
    assert [p.name for p in tmp_path.iterdir()] == ["movie.gif"]   # no temporary file left behind


def test_mp4_through_the_bundled_ffmpeg(tmp_path):
    import imageio_ffmpeg

    run = RUNS["sphere-lagrangian"]()
    path = write_movie(run, tmp_path / "movie.mp4", fps=10, frames=8)
    assert path.read_bytes()[4:8] == b"ftyp"
    assert imageio_ffmpeg.count_frames_and_secs(str(path)) == (8, 0.8)


def test_frames_are_sampled_evenly_first_and_last_included():
    assert frame_indices(11, 6).tolist() == [0, 2, 4, 6, 8, 10]
    assert frame_indices(3, 200).tolist() == [0, 1, 2]
    assert frame_indices(1000, MAX_FRAMES).size == MAX_FRAMES


def test_an_existing_movie_is_replaced_only_by_a_complete_one(tmp_path):
    path = tmp_path / "movie.gif"
    path.write_bytes(b"old movie")
    with pytest.raises(InputError):
        write_movie(xr.Dataset(coords={"time": [0.0, 1.0]}, attrs={"geometry": "circle"}), path)
    assert path.read_bytes() == b"old movie"
    write_movie(RUNS["circle"](), path, frames=2)
    with Image.open(path) as movie:
        assert movie.n_frames == 2


@pytest.mark.parametrize("call, message", [
    (lambda run, d: write_movie(run, d / "movie.avi"), "movie path must be a file name ending in one of .gif, .mp4"),
    (lambda run, d: write_movie(run, d / "movie.gif", fps=0), "movie: fps must be an integer in 1..60 (got 0)"),
    (lambda run, d: write_movie(run, d / "movie.gif", frames=MAX_FRAMES + 1),
     f"movie: frames must be an integer in 1..{MAX_FRAMES} (got {MAX_FRAMES + 1})"),
    (lambda run, d: write_movie(xr.Dataset(coords={"time": [0.0, 1.0]}, attrs=run.attrs), d / "movie.gif"),
     "movie: this circle run lacks density, theta, mass (a circle movie needs density, theta, mass)"),
    (lambda run, d: write_movie(xr.Dataset(attrs={"geometry": "torus"}), d / "movie.gif"),
     "movie: geometry torus is not supported"),
    (lambda run, d: plot_run(xr.Dataset(coords={"time": [0.0, 1.0]}, attrs=run.attrs), d / "f.png"),
     "plot: this circle run lacks density, theta, mass, energy, mode_amplitude"),
    (lambda run, d: plot_run(run, d / "f.xyz"), "image path must be a file name ending in one of .png"),
])
def test_refusals_are_one_line_and_leave_no_file(call, message, tmp_path):
    run = RUNS["circle"]()
    with pytest.raises(InputError) as error:
        call(run, tmp_path)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
    assert list(tmp_path.iterdir()) == []
