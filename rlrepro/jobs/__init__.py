"""Running one training job (above the agents): the runner, checkpoints, progress lines, memory, the run lock and
the run-folder format. The agents never import from here."""
