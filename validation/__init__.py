"""Studies that check the solvers against theory and each other; benchmarks."""
