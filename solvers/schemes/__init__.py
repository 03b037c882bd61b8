"""The discretisations: the scheme contract and every right-hand side (spectral, Galerkin, finite volume,
Lagrangian, particles, causal), with the interactions and compiled kernels they call."""
