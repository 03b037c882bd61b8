"""The choices and ranges of ``meanfield hardmax`` and ``meanfield rd`` (:mod:`meanfield.token_runs`), kept apart
from it so that the command line's ``--help`` states them without importing scipy and xarray."""

#: ``--case`` of ``meanfield hardmax`` besides a ``FILE.npz`` (arrays ``x0``: n x d, ``A``: d x d).
HARDMAX_CASES = ("psd", "nsd", "random")
#: ``--value`` of ``meanfield rd`` besides a ``FILE.npz``: ``V = I`` and the value matrices of
#: :data:`meanfield.rd_tokens.PAPER_VALUE_MATRICES`.
RD_VALUES = ("identity", "paper-2d", "paper-3d-negative", "paper-3d-positive")
#: The largest ``--n`` of ``meanfield hardmax``: every bracket point of an exact segment costs an ``n x n`` expm.
MAX_HARDMAX_N = 1000
#: The largest ``--n`` of ``meanfield rd`` (DOP853 on ``n d`` unknowns, ``n^2`` weights a stage).
MAX_RD_N = 2000
#: The largest ``--dim`` of both (``d x d`` matrices).
MAX_TOKEN_DIM = 1024
#: The largest ``--t-final`` of ``meanfield hardmax`` (the event search grid grows as ``log T``).
MAX_HARDMAX_T = 1e4
#: ``meanfield rd``: ``2 lambda_1 t_final`` stays below this, so the logits ``beta |e^{tV} z|^2`` stay doubles
#: (MATH.md §12.1).
MAX_RD_EXPONENT = 600.0
#: The largest ``--frames``.
MAX_TOKEN_FRAMES = 100_000
#: The largest ``--beta`` of the finite-beta twin.
MAX_TWIN_BETA = 1e9
