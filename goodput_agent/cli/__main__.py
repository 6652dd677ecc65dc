"""`python -m goodput_agent.cli`, as the tests and benchmarks run it."""

from goodput_agent.cli.main import main

main()
