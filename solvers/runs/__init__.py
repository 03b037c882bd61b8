"""The run loop and the drivers: solve, particles, Gaussian moments, rerun, with what they share (clock, seed,
restart of a run file's model, initial state)."""
