"""Stationary states: Newton on the fixed-point map, the branches by continuation, their checks by time evolution."""
