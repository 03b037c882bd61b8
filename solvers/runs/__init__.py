"""The run loop and the drivers: solve, particles, Gaussian moments, rerun, with what they share (clock, seed,
continuation of a run file's model, initial state)."""
