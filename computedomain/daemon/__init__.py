"""cd-imex-daemon: clique registration, IMEX config and hosts file, nvidia-imex supervision."""
