"""What is watched while a run runs: perf profiles (folded stacks), perf counters, /proc and
PSI monitors — recorded where the phase runs (through the run's executors), stored per run,
and read back as series that compare like metrics. Below `execution/` (which calls it) and above
`store/` and `workloads/`."""
