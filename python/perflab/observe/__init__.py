"""What is watched while a run runs: perf profiles (folded stacks), perf counters, /proc and
PSI monitors — recorded where the phase runs (through the run's executors), stored per run,
and read back as series that compare like metrics. Below `run/` (which calls it) and above
`store/` and `workloads/`."""

#: The names of a run's profile artifacts (`observe.profile` writes them): folded stacks
#: (gzip) and what recorded them (JSON), per phase. Here so that reading them back
#: (`observe.movers`) can ask whether any exist before importing the rest.
PROFILE_PREFIX = "profile:"  # profile:PHASE
INFO_PREFIX = "profile-info:"  # profile-info:PHASE
