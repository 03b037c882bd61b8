"""What the command line, the solvers and the studies run on: signals (Ctrl-C, SIGTERM), threads, progress bars,
input files and output paths, and the run files read and written (storage).  It imports neither the solvers nor
the command line (:mod:`meanfield.cli`, which sits above both).
"""
