"""The bases: planned transforms and quadrature (Fourier on the circle, spherical harmonics on S^2, Gegenbauer
polynomials for zonal densities); no scheme."""
