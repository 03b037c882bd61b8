"""The studies: each checks a claim of MATH.md against runs, with its figure, table and claims."""
