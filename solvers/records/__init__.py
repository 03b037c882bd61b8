"""What a run file holds besides its frames: the restart and start records, and the attributes every run records."""
