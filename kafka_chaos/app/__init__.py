"""The application service: what ``kafka-chaos run`` does once its arguments are parsed
(``runs``), and the progress lines every long command prints (``progress``). Above scenarios,
results and records; below the CLI."""
